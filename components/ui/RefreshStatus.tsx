"use client";

import { RefreshCw } from "lucide-react";
import { formatClockTime } from "./format";
import { clsx } from "clsx";
import styles from "./RefreshStatus.module.css";
import { Icon } from "./Icon";

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
    <div className={styles.refresh} aria-live="polite">
      <span>
        {/* Inside the sentence, so a narrow screen never leaves the dot alone on a line. */}
        <span className={clsx(styles.dot, fetching ? styles.busy : stale && styles.stale)} aria-hidden="true" />
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
        <Icon icon={RefreshCw} size="sm" spin={fetching} />
        {fetching ? "Refreshing…" : "Refresh"}
      </button>
    </div>
  );
}
