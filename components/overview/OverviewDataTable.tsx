"use client";

import { useQuery } from "@tanstack/react-query";
import { QueryView } from "@/components/ui/QueryView";
import { formatClockTime, formatCount } from "@/components/ui/format";
import { overviewQuery } from "./queries";
import { NoSources } from "./NoSources";
import { OverviewStats, OverviewStatsSkeleton } from "./OverviewStats";
import { OverviewTable } from "./OverviewTable";
import { attemptsOf } from "./figures";
import { ReplayHealthNotice } from "./ReplayHealthNotice";
import { RecentReplays } from "./RecentReplays";
import textStyles from "@/components/ui/text.module.css";
import { Loading } from "@/components/ui/Loading";

/** Loads the overview and picks what to show: loading, error, first-run guidance, or the figures. */
export function OverviewDataTable() {
  const query = useQuery(overviewQuery());
  return (
    <QueryView
      query={query}
      loading={
        <>
          <OverviewStatsSkeleton />
          <Loading>Loading figures…</Loading>
        </>
      }
      errorTitle="The overview could not be loaded"
      errorHint={<p className="muted">It is retried automatically every 10 s. A 503 means the database is unreachable.</p>}
      stale={(data) => `Refresh failed: these figures are from ${formatClockTime(data.asOf)}`}
      empty={(data) => data.totals.sources === 0 && <NoSources />}
    >
      {(data) => (
        <>
          <ReplayHealthNotice replays={data.replays} />
          <OverviewStats overview={data} />
          <h2 className={textStyles.sectionTitle}>Per source</h2>
          <OverviewTable overview={data} />
          <RecentReplays replays={data.replays} />
          {attemptsOf(data.totals.lastHour) === 0 && (
            <p className={textStyles.note}>
              No claim in the last hour. Services claim through <code>POST /api/v1/claims</code> with an API key of scope{" "}
              <code>claims:write</code>.
            </p>
          )}
          <p className={textStyles.footnote}>
            Keys are counted now in the dedup table while it holds at most {formatCount(data.countLimit)} keys; past that, the
            totals come from the metrics sampler&apos;s newest sample (≈), taken once a minute, and per-source alive and
            expired counts show as —. &ldquo;Last hour&rdquo; sums the per-minute claim counts since{" "}
            {formatClockTime(data.lastHourSince, false)}; each server process writes its counts every few seconds, so the newest
            seconds may not be in yet. Expired keys no longer catch duplicates even before the pruner deletes them.
          </p>
        </>
      )}
    </QueryView>
  );
}
