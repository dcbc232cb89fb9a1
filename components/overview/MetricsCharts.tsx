"use client";

import type { ReactNode } from "react";
import { BarLineChart } from "@/components/charts/BarLineChart";
import { ChartLegend } from "@/components/charts/ChartTooltip";
import { TimeSeriesChart } from "@/components/charts/TimeSeriesChart";
import { formatBytes, formatCompact, formatCount } from "@/components/ui/format";
import type { MetricsResponse } from "@/lib/metrics/schema";
import {
  byteTicks,
  formatAxisTime,
  formatPointTime,
  formatRate,
  formatStep,
  hasValues,
  latestOf,
  peakOf,
  runSeries,
  sampleSeries,
  timeTicks,
  type SamplePoint,
} from "./chart-data";
import styles from "./overview.module.css";

const COLORS = {
  bytes: "#3b6fe0",
  indexBytes: "#7c9cf0",
  rows: "#d97706",
  alive: "#16a34a",
  backlog: "#c2410c",
  rowsDeleted: "#8b5cf6",
  rate: "#0d9488",
  claims: "#3b6fe0",
  duplicates: "#db2777",
};

function ChartCard({ title, headline, legend, children }: { title: string; headline?: ReactNode; legend?: ReactNode; children: ReactNode }) {
  return (
    <section className={styles.chartCard} aria-label={title} data-chart={title}>
      <header className={styles.chartHeader}>
        <h3 className={styles.chartTitle}>{title}</h3>
        {headline && <div className={styles.chartHeadline}>{headline}</div>}
      </header>
      {legend}
      <div className={styles.chartPlot}>{children}</div>
    </section>
  );
}

function NoData({ children }: { children: ReactNode }) {
  return <p className={`muted ${styles.chartEmpty}`}>{children}</p>;
}

/**
 * The Overview's four charts for one range. Display only: data preparation is in chart-data.ts.
 * `backlogNow`: the live backlog figure the "Expired, not pruned" card shows, for the backlog's headline.
 */
export function MetricsCharts({ metrics, backlogNow }: { metrics: MetricsResponse; backlogNow?: string }) {
  const from = Date.parse(metrics.from);
  const to = Date.parse(metrics.to);
  const range = to - from;
  const points = sampleSeries(metrics);
  const runs = runSeries(metrics.pruneRuns);
  const domain: [number, number] = [from, to];
  const common = {
    domain,
    ticks: timeTicks(from, to),
    formatX: (t: number) => formatAxisTime(t, range),
    formatTime: (t: number) => formatPointTime(t),
  };
  const sampled = hasValues(points, "tableBytes");
  const per = formatStep(metrics.step);

  const latestBytes = latestOf(points, "tableBytes");
  const latestRows = latestOf(points, "estimatedRows");
  const latestBacklog = latestOf(points, "expiryBacklog");
  const peakBacklog = peakOf(points, "expiryBacklog");
  const rowsDeleted = runs.reduce((n, r) => n + r.rows, 0);
  const runCount = runs.reduce((n, r) => n + r.runs, 0);
  const claims = points.reduce((n, p) => n + (p.claims ?? 0), 0);
  const duplicates = points.reduce((n, p) => n + (p.duplicates ?? 0), 0);
  const noSamples = <NoData>No sample in this range yet: the sampler writes one a minute.</NoData>;

  return (
    <div className={styles.chartGrid}>
      <ChartCard
        title="Dedup table size"
        headline={latestBytes !== null && latestRows !== null && <>{formatBytes(latestBytes)} · ≈{formatCompact(latestRows)} rows</>}
        legend={
          <ChartLegend
            items={[
              { name: "On disk", color: COLORS.bytes },
              { name: "Indexes", color: COLORS.indexBytes, dashed: true },
              { name: "Rows (right axis)", color: COLORS.rows },
              { name: "Alive keys (right axis)", color: COLORS.alive, dashed: true },
            ]}
          />
        }
      >
        {sampled ? (
          <TimeSeriesChart<SamplePoint>
            {...common}
            data={points}
            series={[
              { key: "tableBytes", name: "On disk", color: COLORS.bytes },
              { key: "indexBytes", name: "Indexes", color: COLORS.indexBytes, dashed: true },
              { key: "estimatedRows", name: "Rows", color: COLORS.rows, axis: "right" },
              { key: "aliveKeys", name: "Alive keys", color: COLORS.alive, axis: "right", dashed: true },
            ]}
            formatLeft={formatBytes}
            leftTicks={byteTicks(peakOf(points, "tableBytes") ?? 0)}
            formatRight={formatCompact}
          />
        ) : (
          noSamples
        )}
      </ChartCard>

      <ChartCard
        title="Expiry backlog"
        headline={
          (backlogNow !== undefined || latestBacklog !== null) && (
            <>
              {backlogNow ?? formatCount(latestBacklog ?? 0)} now · peak {formatCount(peakBacklog ?? 0)}
            </>
          )
        }
        legend={<ChartLegend items={[{ name: "Expired, not yet pruned", color: COLORS.backlog }]} />}
      >
        {sampled ? (
          <TimeSeriesChart<SamplePoint>
            {...common}
            data={points}
            series={[{ key: "expiryBacklog", name: "Expired, not pruned", color: COLORS.backlog }]}
            formatLeft={formatCount}
            tooltipNote={(p) => (p.backlogCapped ? "the count stopped at its cap: at least this many" : null)}
          />
        ) : (
          noSamples
        )}
      </ChartCard>

      <ChartCard
        title="Cleanup throughput"
        headline={runCount > 0 && <>{formatCount(rowsDeleted)} keys deleted in {formatCount(runCount)} runs</>}
        legend={
          <ChartLegend
            items={[
              { name: metrics.step === 60 ? "Keys deleted per run" : `Keys deleted per ${per}`, color: COLORS.rowsDeleted, bar: true },
              { name: "Keys per second (right axis)", color: COLORS.rate },
            ]}
          />
        }
      >
        {runs.length > 0 ? (
          <BarLineChart
            {...common}
            data={runs}
            bar={{ key: "rows", name: "Keys deleted", color: COLORS.rowsDeleted, format: formatCompact }}
            line={{ key: "rowsPerSecond", name: "Keys per second", color: COLORS.rate, format: formatRate }}
            tooltipNote={(r) => (
              <>
                {r.runs > 1 ? `${r.runs} runs, ` : ""}
                {formatCount(r.batches)} batches{r.stopped ? ` · stopped: ${r.stopped.replace("_", " ")}` : r.runs === 1 ? " · running" : ""}
              </>
            )}
          />
        ) : (
          <NoData>No pruning run in this range.</NoData>
        )}
      </ChartCard>

      <ChartCard
        title={`Claims and duplicates per ${per}`}
        headline={
          sampled && (
            <>
              {formatCount(claims)} claims · {formatCount(duplicates)} duplicates
            </>
          )
        }
        legend={
          <ChartLegend
            items={[
              { name: "Claims (new keys)", color: COLORS.claims },
              { name: "Duplicates", color: COLORS.duplicates },
            ]}
          />
        }
      >
        {sampled ? (
          <TimeSeriesChart<SamplePoint>
            {...common}
            data={points}
            series={[
              { key: "claims", name: "Claims", color: COLORS.claims },
              { key: "duplicates", name: "Duplicates", color: COLORS.duplicates },
            ]}
            formatLeft={formatCompact}
          />
        ) : (
          noSamples
        )}
      </ChartCard>
    </div>
  );
}

/** Placeholders with the charts' footprint while the first history loads. */
export function MetricsChartsSkeleton() {
  return (
    <div className={styles.chartGrid} aria-busy="true">
      {["Dedup table size", "Expiry backlog", "Cleanup throughput", "Claims and duplicates"].map((title) => (
        <ChartCard key={title} title={title}>
          <div className={`skeleton ${styles.chartSkeleton}`} />
        </ChartCard>
      ))}
    </div>
  );
}
