"use client";

import { useRouter } from "next/navigation";
import { useMemo } from "react";
import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { formatClockTime } from "@/components/ui/format";
import { METRICS_REFRESH_MS, metricsQuery, overviewQuery } from "./queries";
import { SOURCE_ROWS_SHOWN } from "@/lib/overview/source-rows";
import { sourceNamesQuery } from "@/components/sources/queries";
import { backlogNow } from "./figures";
import type { MetricsRange } from "@/lib/metrics/schema";
import { formatStep } from "./chart-data";
import { MetricsCharts, MetricsChartsSkeleton } from "./MetricsCharts";
import { RangePicker } from "./RangePicker";
import { SourcePicker } from "./SourcePicker";
import styles from "./overview.module.css";
import textStyles from "@/components/ui/text.module.css";

/**
 * The Overview's trends: loads the metrics history of the chosen range (of every source, or of the one
 * picked in the source filter) and picks what to show. The backlog chart's "now" is the live figure the
 * "Expired, not pruned" card shows (the same overview read), not the last sample's. The source picker finds
 * any source as you type: the names in that read, or past SOURCE_ROWS_SHOWN sources, those of GET
 * /api/v1/source-names.
 */
export function MetricsPanel({ range, source = null }: { range: MetricsRange; source?: string | null }) {
  const router = useRouter();
  const query = useQuery(metricsQuery(range, source));
  const { data, isFetching, isPlaceholderData } = query;
  const overview = useQuery(overviewQuery());
  // The overview's rows name every source up to SOURCE_ROWS_SHOWN; past that, the picker reads every name
  // (GET /api/v1/source-names, not on the 10 s refresh), and says so while they load. Should that read fail,
  // it offers the busiest and says that they are not all.
  const partial = overview.data !== undefined && overview.data.sources.length < overview.data.totals.sources;
  const every = useQuery({ ...sourceNamesQuery(), enabled: partial });
  const fallback = partial && every.isError && !every.data;
  // Built again when the names change, not on every refresh (react-query keeps `names` the same array while
  // the answer is the same; the rows only while they are the list).
  const rows = partial && !fallback ? null : overview.data?.sources;
  const pickable = useMemo(() => (partial && !fallback ? every.data?.names : rows?.map((s) => s.source)), [partial, fallback, every.data, rows]);

  return (
    <section className={styles.metrics} aria-label="Trends" aria-busy={isFetching}>
      <div className={styles.metricsHeader}>
        <h2 className={textStyles.sectionTitle}>Trends</h2>
        <RangePicker value={range} keep={{ source }} />
        <SourcePicker
          names={pickable}
          incomplete={fallback ? `Only the ${SOURCE_ROWS_SHOWN} busiest are listed: the other names could not be loaded (${every.error instanceof Error ? every.error.message : "error"}). Retried every minute.` : undefined}
          value={source}
          onChange={(picked) => router.replace(`?range=${range}${picked ? `&source=${encodeURIComponent(picked)}` : ""}`, { scroll: false })}
        />
        <span className="muted small">
          {isPlaceholderData
            ? "Loading…"
            : data
              ? `one point per ${formatStep(data.step)} · to ${formatClockTime(data.to, false)} · refreshes every ${METRICS_REFRESH_MS / 1000} s`
              : null}
        </span>
      </div>
      <QueryView
        query={query}
        loading={<MetricsChartsSkeleton />}
        errorTitle="The charts could not be loaded"
        errorHint={<p className="muted">They are retried automatically every minute. A 503 means the database is unreachable.</p>}
        stale={(data) => `Refresh failed: these charts end at ${formatClockTime(data.to)}`}
        empty={(data) =>
          data.samples.length === 0 &&
          data.pruneRuns.length === 0 && (
            <EmptyState title="No metrics in this range yet">
              <p>
                The server samples the dedup table once a minute (its size, the keys waiting to be pruned, claims and duplicates)
                and keeps 30 days of samples; each pruning run is recorded as it happens. Charts appear with the first sample.
              </p>
              <p className="muted">
                Nothing after a few minutes? The sampler may be turned off: <code>KEYWARD_SAMPLE_INTERVAL_SECONDS=0</code>.
              </p>
            </EmptyState>
          )
        }
      >
        {(data) => (
          <>
            {source && (
              <p className="muted small">
                Showing {source}: its keys, backlog, claims and duplicates, and its estimated share of the table&apos;s bytes. Cleanup runs
                are the whole table&apos;s.
              </p>
            )}
            <MetricsCharts metrics={data} backlogNow={overview.data ? backlogNow(overview.data, source) : undefined} />
          </>
        )}
      </QueryView>
    </section>
  );
}
