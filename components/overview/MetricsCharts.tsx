"use client";

import { AnnotationList } from "@/components/charts/AnnotationList";
import { BarLineChart } from "@/components/charts/BarLineChart";
import { ChartCard, ChartEmpty, ChartGrid, ChartSkeleton } from "@/components/charts/ChartCard";
import { CHART_COLORS as COLORS } from "@/components/charts/colors";
import { ChartLegend } from "@/components/charts/ChartTooltip";
import { TimeSeriesChart } from "@/components/charts/TimeSeriesChart";
import { formatBytes, formatCompact, formatCount } from "@/components/ui/format";
import type { MetricsResponse } from "@/lib/metrics/schema";
import { byteTicks, formatRate, formatStep, hasValues, latestOf, peakOf, runSeries, sampleSeries, timeAxes, type SamplePoint } from "./chart-data";
import { ClaimsChart } from "./ClaimsChart";

/**
 * The Overview's four charts for one range. Display only: data preparation is in chart-data.ts.
 * `backlogNow`: the live backlog figure the "Expired, not pruned" card shows, for the backlog's headline.
 */
export function MetricsCharts({ metrics, backlogNow }: { metrics: MetricsResponse; backlogNow?: string }) {
  const points = sampleSeries(metrics);
  const runs = runSeries(metrics.pruneRuns);
  const common = timeAxes(metrics);
  const sampled = hasValues(points, "tableBytes");
  const per = formatStep(metrics.step);

  const latestBytes = latestOf(points, "tableBytes");
  const latestRows = latestOf(points, "estimatedRows");
  const latestBacklog = latestOf(points, "expiryBacklog");
  const peakBacklog = peakOf(points, "expiryBacklog");
  const rowsDeleted = runs.reduce((n, r) => n + r.rows, 0);
  const runCount = runs.reduce((n, r) => n + r.runs, 0);
  const noSamples = <ChartEmpty>No sample in this range yet: the sampler writes one a minute.</ChartEmpty>;

  return (
    <>
      <ChartGrid>
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
              bands={metrics.step > 60 ? [{ low: "tableBytesMin", high: "tableBytesMax", color: COLORS.bytes }] : []}
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
            <ChartEmpty>No pruning run in this range.</ChartEmpty>
          )}
        </ChartCard>

        <ClaimsChart title={`Claims and duplicates per ${per}`} points={points} axes={common} empty={sampled ? null : noSamples} />
      </ChartGrid>
      <AnnotationList annotations={metrics.annotations} />
    </>
  );
}

/** Placeholders with the charts' footprint while the first history loads. */
export function MetricsChartsSkeleton() {
  return (
    <ChartGrid busy>
      {["Dedup table size", "Expiry backlog", "Cleanup throughput", "Claims and duplicates"].map((title) => (
        <ChartCard key={title} title={title}>
          <ChartSkeleton />
        </ChartCard>
      ))}
    </ChartGrid>
  );
}
