"use client";

import { formatClockTime } from "./format";

/**
 * How fresh the figures on screen are: the database time they were read at, the refresh cadence, and a
 * manual refresh. `stale` says the last refresh failed and the figures are older than they look.
 */
export function RefreshStatus({
  asOf,
  everySeconds,
  fetching,
  stale,
  onRefresh,
}: {
  asOf?: string;
  everySeconds: number;
  fetching: boolean;
  stale: boolean;
  onRefresh: () => void;
}) {
  return (
    <div className="refresh" aria-live="polite">
      <span className={`refresh__dot${fetching ? " refresh__dot--busy" : stale ? " refresh__dot--stale" : ""}`} aria-hidden="true" />
      <span className="refresh__text">
        {asOf ? (
          <>
            As of <time dateTime={asOf}>{formatClockTime(asOf)}</time> (database clock)
          </>
        ) : stale ? (
          "No figures yet"
        ) : (
          "Loading…"
        )}
        <span className="muted"> · refreshes every {everySeconds} s</span>
      </span>
      <button type="button" className="button button--small" onClick={onRefresh} disabled={fetching}>
        {fetching ? "Refreshing…" : "Refresh"}
      </button>
    </div>
  );
}
