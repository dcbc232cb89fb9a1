import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { detailSummary, kindLabel } from "./prepare";
import type { AuditRow } from "./queries";
import { Table } from "@/components/ui/Table";

/** One page of audit rows, newest first. Display only. */
export function AuditTable({ rows }: { rows: AuditRow[] }) {
  return (
    <Table caption="Audit history, newest first" columns={["Time", "Source", "Event", "Type", "Kind", "Actor", "Detail"]}>
      {rows.map((r) => (
        <tr key={r.id}>
          <td>
            <time dateTime={r.at} title={r.at}>
              {formatDateTime(r.at, true)}
            </time>
          </td>
          <td className="mono">{r.source ?? <span className="muted">—</span>}</td>
          <td>{r.eventId ? <EventLink source={r.source} eventId={r.eventId} /> : <span className="muted">—</span>}</td>
          <td className="mono">{r.eventType ?? <span className="muted">—</span>}</td>
          <td>
            <span className="status" title={r.kind}>
              {kindLabel(r.kind)}
            </span>
          </td>
          <td className="mono">{r.actor ?? <span className="muted">—</span>}</td>
          <td className="small mono">{detailSummary(r) || <span className="muted">—</span>}</td>
        </tr>
      ))}
    </Table>
  );
}
