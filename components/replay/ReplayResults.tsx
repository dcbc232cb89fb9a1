import { EventLink } from "@/components/ui/EventLink";
import { formatCount } from "@/components/ui/format";
import { Table } from "@/components/ui/Table";
import { OUTCOME_LABEL } from "./progress";
import type { Replay, ReplayItemResult } from "@/lib/replay/schema";
import styles from "./replay.module.css";
import textStyles from "@/components/ui/text.module.css";
import tableStyles from "@/components/ui/Table.module.css";
import { clsx } from "clsx";

/** A finished replay's items that did not get delivered, with the reason for each. Display only. */
export function ReplayResults({ replay }: { replay: Replay }) {
  const failures = replay.failures;
  const skipped = replay.items.filter((i) => i.outcome === "skipped_unsafe");
  return (
    <section aria-label="Replay results">
      {replay.counts.delivered === replay.total && replay.total > 0 ? (
        <p className={textStyles.note}>All {formatCount(replay.total)} events were delivered.</p>
      ) : null}
      {failures.length > 0 && <ItemTable title="Failed" items={failures} source={replay.source} />}
      {skipped.length > 0 && <ItemTable title="Skipped as unsafe" items={skipped} source={replay.source} />}
      {replay.counts.cancelled > 0 && (
        <p className="muted">
          {formatCount(replay.counts.cancelled)} event{replay.counts.cancelled === 1 ? " was" : "s were"} cancelled before being sent.
        </p>
      )}
    </section>
  );
}

function ItemTable({ title, items, source }: { title: string; items: ReplayItemResult[]; source: string }) {
  return (
    <Table
      caption={
        <>
          {title} ({formatCount(items.length)})
        </>
      }
      captionClassName={clsx(textStyles.subtitle, styles.caption)}
      columns={["Event", "Outcome", { label: "Attempts", num: true }, "Last answer"]}
      wrap
    >
      {items.map((i) => (
        <tr key={i.deadLetterId}>
          <td>
            <EventLink source={source} eventId={i.eventId} />
          </td>
          <td>{OUTCOME_LABEL[i.outcome]}</td>
          <td className={tableStyles.num}>{i.attempts}</td>
          <td className="mono small">
            {/* lastError already names its status ("HTTP 500 …"): the status alone only when there is no error. */}
            {i.lastError ?? (i.lastStatus !== null ? `HTTP ${i.lastStatus}` : "")}
          </td>
        </tr>
      ))}
    </Table>
  );
}
