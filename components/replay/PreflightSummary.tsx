import { EventLink } from "@/components/ui/EventLink";
import { formatCount, formatDateTime } from "@/components/ui/format";
import { categoryRows, itemsByCategory } from "./categories";
import { describeExpiry } from "./key-risk";
import type { Preflight } from "@/lib/replay/schema";
import styles from "./replay.module.css";
import { Table } from "@/components/ui/Table";
import { clsx } from "clsx";
import tableStyles from "@/components/ui/Table.module.css";
import { Status } from "@/components/ui/Status";

/** Items listed per category before "and N more". */
const SHOWN = 100;

/** The five categories with their counts and meaning, and each one's events. Display only. */
export function PreflightSummary({ preflight, nowMs }: { preflight: Preflight; nowMs: number }) {
  const rows = categoryRows(preflight.counts);
  const byCategory = itemsByCategory(preflight.items);
  return (
    <>
      <Table
        caption="Preflight summary"
        columns={[
          "Category",
          { label: "Events", num: true },
          "What it means for a replay",
        ]}
        wrap
      >
        {rows.map((r) => (
          <tr key={r.category} className={r.count === 0 ? tableStyles.inactive : undefined} data-category={r.category}>
            <th scope="row">
              <Status tone={r.tone}>{r.label}</Status>
            </th>
            <td className={clsx(tableStyles.num, tableStyles.strong)} data-testid={`count-${r.category}`}>
              {formatCount(r.count)}
            </td>
            <td>{r.explanation}</td>
          </tr>
        ))}
      </Table>
      {rows
        .filter((r) => r.count > 0)
        .map((r) => {
          const items = byCategory[r.category];
          return (
            <details key={r.category} className={styles.items}>
              <summary>
                {r.label}: {formatCount(r.count)} event{r.count === 1 ? "" : "s"}
              </summary>
              <ul className={styles.itemList}>
                {items.slice(0, SHOWN).map((i) => (
                  <li key={i.deadLetterId}>
                    <EventLink source={preflight.source} eventId={i.eventId} /> <span className="muted small">{i.eventType}</span>
                    <span className="small">
                      {" "}
                      — {i.reason}
                      {i.keyExpiresAt && (
                        <span className="muted" title={formatDateTime(i.keyExpiresAt, true)}>
                          {" "}
                          (key {describeExpiry(Date.parse(i.keyExpiresAt), nowMs)})
                        </span>
                      )}
                    </span>
                  </li>
                ))}
              </ul>
              {items.length > SHOWN && <p className="muted small">and {formatCount(items.length - SHOWN)} more</p>}
            </details>
          );
        })}
    </>
  );
}
