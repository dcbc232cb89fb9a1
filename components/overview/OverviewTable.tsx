import Link from "next/link";
import { formatCount, formatPercent } from "@/components/ui/format";
import { Table, type Column } from "@/components/ui/Table";
import { formatDuration } from "@/lib/sources/duration";
import { useState } from "react";
import type { ClaimCounts, KeyCounts, Overview, SourceOverview } from "@/lib/overview/schema";
import { attemptsOf } from "./figures";
import { SOURCE_ROWS_SHOWN } from "@/lib/overview/source-rows";
import { useQuery } from "@tanstack/react-query";
import { useDebounced } from "@/components/ui/useDebounced";
import { OVERVIEW_REFRESH_MS, overviewQuery } from "./queries";
import styles from "./overview.module.css";
import { clsx } from "clsx";
import tableStyles from "@/components/ui/Table.module.css";
import textStyles from "@/components/ui/text.module.css";

/**
 * A count cell: zeros fade so non-zero figures stand out; `warn` marks figures that need a look when
 * non-zero; null (more keys than the overview counts one by one) is a dash, explained on hover.
 */
function Num({ value, warn = false }: { value: number | null; warn?: boolean }) {
  if (value === null) {
    return (
      <td className={clsx(tableStyles.num, tableStyles.zero)} title="More keys than the overview counts on every refresh; the totals above show the sampler's estimate">
        —
      </td>
    );
  }
  return <td className={clsx(tableStyles.num, value === 0 ? tableStyles.zero : warn && "warn-text")}>{formatCount(value)}</td>;
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
      <td className={tableStyles.num}>{formatPercent(lastHour.duplicate, attemptsOf(lastHour))}</td>
      <Num value={lastHour.inFlight} />
      <Num value={lastHour.payloadMismatch} warn />
    </>
  );
}

const COLUMNS: readonly Column[] = [
  "Source",
  { label: "Alive", num: true, group: "Keys now", title: "Expiry still ahead: repeats of these events are caught" },
  { label: "In flight", num: true, group: "Keys now", title: "Claimed with a lease, not completed yet" },
  { label: "Lease lapsed", num: true, group: "Keys now", title: "In flight past the lease: the worker likely died; the next delivery takes over" },
  { label: "Expired", num: true, group: "Keys now", title: "Past expiry, not yet deleted by the pruner" },
  { label: "Claims", num: true, group: "Last hour", title: "Claims that created a key" },
  { label: "Duplicates", num: true, group: "Last hour", title: "Deliveries of an event already done" },
  { label: "Dup. share", num: true, group: "Last hour", title: "Duplicates as a share of all deliveries" },
  { label: "In flight", num: true, group: "Last hour", title: "Deliveries turned away: another worker held the lease" },
  { label: "Mismatch", num: true, group: "Last hour", title: "Same event id, different payload hash" },
];

/**
 * Per-source figures, one row per source, totals of every source in the footer. Past SOURCE_ROWS_SHOWN
 * sources the server sends the busiest (lib/overview/source-rows.ts); the table says how many it leaves out,
 * offers "Show all", and filters by name, each asking the server for those rows (overviewQuery({ q, all })).
 */
export function OverviewTable({ overview }: { overview: Overview }) {
  const [filter, setFilter] = useState("");
  const [showAll, setShowAll] = useState(false);
  const q = useDebounced(filter.trim());
  const many = overview.totals.sources > SOURCE_ROWS_SHOWN;
  // Only while the filter and "Show all" are on screen: should sources drop to SOURCE_ROWS_SHOWN or fewer,
  // every one of them is in the shared read again, and a filter nobody can see or clear would hide rows.
  const narrowed = many && (q !== "" || showAll);
  const own = useQuery({ ...overviewQuery({ q, all: showAll }), enabled: narrowed });
  // The rows asked for once they are in; meanwhile the previous ones, marked as loading.
  const shown = narrowed && own.data ? own.data : overview;
  const loading = many && (filter.trim() !== q || (narrowed && !own.isError && (!own.data || own.isPlaceholderData)));
  const settledQ = shown === overview ? "" : q;
  const hidden = shown.sourcesMatching - shown.sources.length;
  return (
    <>
      {many && (
        <div className={styles.sourceRowsBar} aria-busy={loading}>
          <label>
            <span className="visually-hidden">Filter sources by name</span>
            <input
              className="input input--small"
              type="search"
              placeholder="Filter sources"
              value={filter}
              onChange={(e) => setFilter(e.target.value)}
            />
          </label>
          <span className="muted small" role="status" data-testid="source-rows-note">
            {loading
              ? "Loading…"
              : hidden > 0
                ? `The ${formatCount(shown.sources.length)} busiest of ${formatCount(shown.sourcesMatching)} sources${settledQ ? " matching" : ""} (deliveries in the last hour, then alive keys)`
                : `${formatCount(shown.sourcesMatching)} of ${formatCount(shown.totals.sources)} sources, by name`}
          </span>
          {(hidden > 0 || showAll) && (
            <button type="button" className="button button--small" onClick={() => setShowAll(!showAll)}>
              {showAll ? `Show the ${SOURCE_ROWS_SHOWN} busiest` : `Show all ${formatCount(shown.sourcesMatching)}`}
            </button>
          )}
        </div>
      )}
      {narrowed && own.isError && (
        <p className="warn-text small" role="alert">
          These sources could not be loaded ({own.error instanceof Error ? own.error.message : String(own.error)});{" "}
          {own.data ? "the rows below are from the last read that answered" : "the busiest are shown"}. Retried every {OVERVIEW_REFRESH_MS / 1000} s.
        </p>
      )}
      <SourcesTable overview={overview} rows={shown.sources} />
      {many && !loading && settledQ && shown.sourcesMatching === 0 && <p className="muted small">No source name contains &ldquo;{settledQ}&rdquo;.</p>}
    </>
  );
}

function SourcesTable({ overview, rows }: { overview: Overview; rows: SourceOverview[] }) {
  return (
    <Table
      caption="Keys and claim outcomes per source"
      columns={COLUMNS}
      foot={
        overview.totals.sources > 1 && (
          <tr>
            <th scope="row">All sources</th>
            <CountCells keys={overview.totals.keys} lastHour={overview.totals.lastHour} />
          </tr>
        )
      }
    >
      {rows.map((s) => (
        <tr key={s.source}>
          <th scope="row">
            <Link className={textStyles.sourceName} href={`/sources/${encodeURIComponent(s.source)}`} prefetch={false}>
              {s.source}
            </Link>
            <div className="muted small" title={`${s.ttl.ttlSeconds} s`}>
              TTL {formatDuration(s.ttl.ttlSeconds)}
            </div>
          </th>
          <CountCells keys={s.keys} lastHour={s.lastHour} />
        </tr>
      ))}
    </Table>
  );
}
