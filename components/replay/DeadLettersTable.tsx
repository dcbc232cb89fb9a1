"use client";

import Link from "next/link";
import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { KeyCell } from "./KeyCell";
import type { DeadLetter } from "@/lib/deadletters/schema";
import { useNow } from "./useNow";
import { Table } from "@/components/ui/Table";
import textStyles from "@/components/ui/text.module.css";
import tableStyles from "@/components/ui/Table.module.css";
import { Status } from "@/components/ui/Status";
import { clsx } from "clsx";
import styles from "./replay.module.css";

/** The dead letters, newest failure first; operators may check pending ones to replay. Display only. */
export function DeadLettersTable({
  items,
  checkable,
  checked,
  onToggle,
}: {
  items: DeadLetter[];
  checkable: boolean;
  checked: ReadonlyMap<string, DeadLetter>;
  onToggle: (d: DeadLetter) => void;
}) {
  const now = useNow(30_000);
  return (
    <Table
      caption="Dead letters"
      columns={[
        checkable && { label: "Select", hideLabel: true },
        "Event",
        "Source",
        "Error",
        { label: "Attempts", num: true },
        "Failed",
        "Status",
        "Key",
      ]}
      wrap
    >
      {items.map((d) => (
        <tr key={d.id}>
          {checkable && (
            <td>
              <input
                type="checkbox"
                aria-label={`Select ${d.eventId}`}
                checked={checked.has(d.id)}
                disabled={d.status !== "pending"}
                onChange={() => onToggle(d)}
              />
            </td>
          )}
          <td>
            <EventLink source={d.source} eventId={d.eventId} />
            <div className="muted small">
              {d.eventType} ·{" "}
              <Link prefetch={false} href={`/dead-letters/${d.id}`} title="This dead letter: payload, error, replay attempts">
                details
              </Link>
            </div>
          </td>
          <td className={textStyles.sourceName}>{d.source}</td>
          <td className={clsx("mono small", styles.errorText)}>{d.error}</td>
          <td className={tableStyles.num}>{d.attempts}</td>
          <td className={tableStyles.nowrap}>
            <time dateTime={d.failedAt}>{formatDateTime(d.failedAt)}</time>
          </td>
          <td>
            <Status tone={d.status === "delivered" ? "ok" : d.status === "replaying" ? "warn" : "off"}>{d.status}</Status>
          </td>
          <td>
            <KeyCell dl={d} nowMs={now} />
          </td>
        </tr>
      ))}
    </Table>
  );
}
