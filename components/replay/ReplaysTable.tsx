import { formatCount, formatDateTime } from "@/components/ui/format";
import { replayProgress } from "./prepare";
import type { ReplaySummary } from "@/lib/replay/schema";

/** Recent replays, newest first, with their state and counts; Open shows one's progress or results. Display only. */
export function ReplaysTable({ replays, onOpen }: { replays: ReplaySummary[]; onOpen: (id: string) => void }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">Replays, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Source</th>
            <th scope="col">Status</th>
            <th scope="col" className="num">
              Settled
            </th>
            <th scope="col" className="num">
              Delivered
            </th>
            <th scope="col" className="num">
              Failed
            </th>
            <th scope="col" className="num">
              Skipped
            </th>
            <th scope="col">By</th>
            <th scope="col">
              <span className="visually-hidden">Open</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {replays.map((r) => {
            const { done, percent } = replayProgress(r);
            return (
              <tr key={r.id}>
                <td className="nowrap">{formatDateTime(r.createdAt, true)}</td>
                <td className="source-name">{r.source}</td>
                <td>
                  {r.status}
                  {r.forced && <span className="badge"> forced</span>}
                </td>
                <td className="num">
                  {formatCount(done)} / {formatCount(r.total)} <span className="muted small">({percent}%)</span>
                </td>
                <td className={`num${r.counts.delivered === 0 ? " zero" : ""}`}>{formatCount(r.counts.delivered)}</td>
                <td className={`num${r.counts.failed === 0 ? " zero" : ""}`}>{formatCount(r.counts.failed)}</td>
                <td className={`num${r.counts.skipped_unsafe === 0 ? " zero" : ""}`}>{formatCount(r.counts.skipped_unsafe)}</td>
                <td>{r.createdBy}</td>
                <td className="actions-cell">
                  <button
                    type="button"
                    className="button button--small"
                    aria-label={`Open replay of ${r.source} started ${formatDateTime(r.createdAt, true)}`}
                    onClick={() => onOpen(r.id)}
                  >
                    Open
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
