import { formatCount, formatPercent } from "@/components/ui/format";
import { formatDuration } from "@/lib/sources/duration";
import type { ClaimCounts, KeyCounts, Overview } from "@/lib/overview/schema";
import { attemptsOf } from "./prepare";

/**
 * A count cell: zeros fade so non-zero figures stand out; `warn` marks figures that need a look when
 * non-zero; null (more keys than the overview counts one by one) is a dash, explained on hover.
 */
function Num({ value, warn = false }: { value: number | null; warn?: boolean }) {
  if (value === null) {
    return (
      <td className="num zero" title="More keys than the overview counts on every refresh; the totals above show the sampler's estimate">
        —
      </td>
    );
  }
  const cls = value === 0 ? "num zero" : warn ? "num warn-text" : "num";
  return <td className={cls}>{formatCount(value)}</td>;
}

function CountCells({ keys, lastHour }: { keys: KeyCounts; lastHour: ClaimCounts }) {
  return (
    <>
      <Num value={keys.alive} />
      <Num value={keys.inFlight} />
      <Num value={keys.leaseLapsed} warn />
      <Num value={keys.expired} />
      <Num value={lastHour.claimed} />
      <Num value={lastHour.duplicate} />
      <td className="num">{formatPercent(lastHour.duplicate, attemptsOf(lastHour))}</td>
      <Num value={lastHour.inFlight} />
      <Num value={lastHour.payloadMismatch} warn />
    </>
  );
}

/** Per-source figures, one row per source, totals in the footer. Display only. */
export function OverviewTable({ overview }: { overview: Overview }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">Keys and claim outcomes per source</caption>
        <thead>
          <tr>
            <th rowSpan={2} scope="col">
              Source
            </th>
            <th colSpan={4} scope="colgroup" className="group">
              Keys now
            </th>
            <th colSpan={5} scope="colgroup" className="group">
              Last hour
            </th>
          </tr>
          <tr>
            <th scope="col" className="num" title="Expiry still ahead: repeats of these events are caught">
              Alive
            </th>
            <th scope="col" className="num" title="Claimed with a lease, not completed yet">
              In flight
            </th>
            <th scope="col" className="num" title="In flight past the lease: the worker likely died; the next delivery takes over">
              Lease lapsed
            </th>
            <th scope="col" className="num" title="Past expiry, not yet deleted by the pruner">
              Expired
            </th>
            <th scope="col" className="num" title="Claims that created a key">
              Claims
            </th>
            <th scope="col" className="num" title="Deliveries of an event already done">
              Duplicates
            </th>
            <th scope="col" className="num" title="Duplicates as a share of all deliveries">
              Dup. share
            </th>
            <th scope="col" className="num" title="Deliveries turned away: another worker held the lease">
              In flight
            </th>
            <th scope="col" className="num" title="Same event id, different payload hash">
              Mismatch
            </th>
          </tr>
        </thead>
        <tbody>
          {overview.sources.map((s) => (
            <tr key={s.source}>
              <th scope="row">
                <div className="source-name">{s.source}</div>
                <div className="muted small" title={`${s.ttl.ttlSeconds} s`}>
                  TTL {formatDuration(s.ttl.ttlSeconds)}
                </div>
              </th>
              <CountCells keys={s.keys} lastHour={s.lastHour} />
            </tr>
          ))}
        </tbody>
        {overview.sources.length > 1 && (
          <tfoot>
            <tr>
              <th scope="row">All sources</th>
              <CountCells keys={overview.totals.keys} lastHour={overview.totals.lastHour} />
            </tr>
          </tfoot>
        )}
      </table>
    </div>
  );
}
