import { Time } from "@/components/ui/Time";
import { EventLink } from "@/components/ui/EventLink";
import { detailSummary, kindLabel } from "./view";
import type { AuditRow } from "./queries";
import { Table } from "@/components/ui/Table";
import tableStyles from "@/components/ui/Table.module.css";
import { clsx } from "clsx";
import styles from "./audit.module.css";
import { Status } from "@/components/ui/Status";

/** One page of audit rows, newest first. Display only. */
export function AuditTable({ rows }: { rows: AuditRow[] }) {
  return (
    // Wrapping, the type under the event id: the Detail column (up to 120 characters of JSON) fits the card
    // at 1440 instead of being cut off.
    <Table caption="Audit history, newest first" columns={["Time", "Source", "Event and type", "Kind", "Actor", "Detail"]} wrap>
      {rows.map((r) => (
        <tr key={r.id}>
          <td className={tableStyles.nowrap}>
            <Time iso={r.at} />
          </td>
          <td className="mono">{r.source ?? <span className="muted">—</span>}</td>
          <td>
            {r.eventId ? <EventLink source={r.source} eventId={r.eventId} /> : <span className="muted">—</span>}
            {r.eventType && <div className="muted small mono">{r.eventType}</div>}
          </td>
          <td>
            <Status title={r.kind}>{kindLabel(r.kind)}</Status>
          </td>
          <td className="mono">{r.actor ?? <span className="muted">—</span>}</td>
          <td className={clsx("small mono", styles.detailCell)}>{detailSummary(r) || <span className="muted">—</span>}</td>
        </tr>
      ))}
    </Table>
  );
}
