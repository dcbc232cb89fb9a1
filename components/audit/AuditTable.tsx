import { EventLink } from "@/components/ui/EventLink";
import { formatDateTime } from "@/components/ui/format";
import { detailSummary, kindLabel } from "./prepare";
import type { AuditRow } from "./queries";

/** One page of audit rows, newest first. Display only. */
export function AuditTable({ rows }: { rows: AuditRow[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">Audit history, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Source</th>
            <th scope="col">Event</th>
            <th scope="col">Type</th>
            <th scope="col">Kind</th>
            <th scope="col">Actor</th>
            <th scope="col">Detail</th>
          </tr>
        </thead>
        <tbody>
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
        </tbody>
      </table>
    </div>
  );
}
