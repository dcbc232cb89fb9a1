import { formatDateTime, formatDuration } from "@/components/ui/format";
import type { SourceOverview } from "@/lib/overview/schema";

function Duration({ seconds }: { seconds: number }) {
  return (
    <td className="num" title={`${seconds} s`}>
      {formatDuration(seconds)}
    </td>
  );
}

/** Each source's key lifetime and how it is made up. Display only. */
export function SourceSettingsTable({ sources }: { sources: SourceOverview[] }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">Sources and their key lifetimes</caption>
        <thead>
          <tr>
            <th scope="col">Source</th>
            <th scope="col" className="num" title="The sender's longest realistic retry window">
              Retry window
            </th>
            <th scope="col" className="num" title="Margin for the time an event may wait in your queue before it is claimed">
              Queue lag
            </th>
            <th scope="col" className="num" title="Margin for clock differences at the boundary">
              Clock skew
            </th>
            <th scope="col" className="num" title="Margin for deliberate replays of old events">
              Replay
            </th>
            <th scope="col" className="num" title="The sum of the four: how long a key lives after its claim">
              Key TTL
            </th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {sources.map((s) => (
            <tr key={s.source}>
              <th scope="row" className="source-name">
                {s.source}
              </th>
              <Duration seconds={s.ttl.retryWindowSeconds} />
              <Duration seconds={s.ttl.queueLagSeconds} />
              <Duration seconds={s.ttl.clockSkewSeconds} />
              <Duration seconds={s.ttl.replaySeconds} />
              <td className="num strong" title={`${s.ttl.ttlSeconds} s`}>
                {formatDuration(s.ttl.ttlSeconds)}
              </td>
              <td>
                <time dateTime={s.createdAt}>{formatDateTime(s.createdAt)}</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
