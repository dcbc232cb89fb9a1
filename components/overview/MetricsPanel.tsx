"use client";

import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { formatClockTime } from "@/components/ui/format";
import { METRICS_REFRESH_MS, metricsQuery } from "./queries";
import type { MetricsRange } from "@/lib/metrics/schema";
import { formatStep } from "./chart-data";
import { MetricsCharts, MetricsChartsSkeleton } from "./MetricsCharts";
import { RangePicker } from "./RangePicker";
import styles from "./overview.module.css";

/** The Overview's trends: loads the metrics history of the chosen range and picks what to show. */
export function MetricsPanel({ range }: { range: MetricsRange }) {
  const query = useQuery(metricsQuery(range));
  const { data, isFetching, isPlaceholderData } = query;

  return (
    <section className={styles.metrics} aria-label="Trends" aria-busy={isFetching}>
      <div className={styles.metricsHeader}>
        <h2 className="section-title">Trends</h2>
        <RangePicker value={range} />
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
        {(data) => <MetricsCharts metrics={data} />}
      </QueryView>
    </section>
  );
}
