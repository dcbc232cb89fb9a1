"use client";

import Link from "next/link";
import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { KeyCell } from "./KeyCell";
import type { DeadLetter } from "@/lib/deadletters/schema";
import { useNow } from "./useNow";
import { Table } from "@/components/ui/Table";

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
          <td className="source-name">{d.source}</td>
          <td className="mono small">{d.error}</td>
          <td className="num">{d.attempts}</td>
          <td className="nowrap">
            <time dateTime={d.failedAt}>{formatDateTime(d.failedAt)}</time>
          </td>
          <td>
            <span className={`status ${d.status === "delivered" ? "status--ok" : d.status === "replaying" ? "status--warn" : "status--off"}`}>
              {d.status}
            </span>
          </td>
          <td>
            <KeyCell dl={d} nowMs={now} />
          </td>
        </tr>
      ))}
    </Table>
  );
}
