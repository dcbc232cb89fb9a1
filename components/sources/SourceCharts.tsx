"use client";

import { formatBytes, formatCompact } from "@/components/ui/format";
import { useQuery } from "@tanstack/react-query";
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { AnnotationList } from "@/components/charts/AnnotationList";
import { ChartCard, ChartEmpty, ChartGrid } from "@/components/charts/ChartCard";
import { CHART_COLORS as COLORS } from "@/components/charts/colors";
import { ChartLegend, ChartTooltip } from "@/components/charts/ChartTooltip";
import { TimeSeriesChart } from "@/components/charts/TimeSeriesChart";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { formatCount } from "@/components/ui/format";
import type { MetricsRange, MetricsResponse } from "@/lib/metrics/schema";
import { byteTicks, hasValues, latestOf, peakOf, sampleSeries, timeAxes, type SamplePoint } from "@/components/overview/chart-data";
import { ClaimsChart } from "@/components/overview/ClaimsChart";
import { RangePicker } from "@/components/overview/RangePicker";
import overview from "@/components/overview/overview.module.css";
import { lateDayPoints } from "./advisor-view";
import { lateDuplicatesQuery, sourceMetricsQuery } from "./advisor-queries";
import textStyles from "@/components/ui/text.module.css";
import chartStyles from "@/components/charts/charts.module.css";

/**
 * The source's own charts: its alive keys and their estimated bytes (its share of the table), its expiry
 * backlog, its claims against duplicates (from the sampler's per-source figures), and its late duplicates
 * per day. Loads its own data; display through the Overview's chart components and preparation.
 */
export function SourceCharts({ name, range, window }: { name: string; range: MetricsRange; window: string }) {
  const metrics = useQuery(sourceMetricsQuery(name, range));
  const late = useQuery(lateDuplicatesQuery(name, window, null));
  return (
    <section className={overview.metrics} aria-label={`${name} over time`}>
      <div className={overview.metricsHeader}>
        <h2 className={textStyles.sectionTitle}>{name} over time</h2>
        <RangePicker value={range} keep={{ window }} />
      </div>
      {metrics.isError && !metrics.data && <ErrorBox title="The charts could not be loaded" error={metrics.error} onRetry={() => void metrics.refetch()} />}
      <ChartGrid>
        {metrics.data ? <KeyCharts metrics={metrics.data} /> : !metrics.isError && <p className="muted">Loading charts…</p>}
        <ChartCard
          title={`Late duplicates per day (last ${window})`}
          headline={late.data && <>{formatCount(late.data.perDay.reduce((n, d) => n + d.count, 0))} processed twice</>}
          legend={
            <ChartLegend
              items={[
                { name: "Late (key expired)", color: COLORS.late, bar: true },
                { name: "By a replay", color: COLORS.replay, bar: true },
              ]}
            />
          }
        >
          {late.data ? (
            <ResponsiveContainer width="100%" height={220} className={chartStyles.chart}>
              <BarChart data={lateDayPoints(late.data.perDay)} margin={{ top: 8, right: 16, bottom: 0, left: 4 }}>
                <CartesianGrid strokeDasharray="3 3" className={chartStyles.grid} vertical={false} />
                <XAxis dataKey="t" tickFormatter={(t: number) => new Date(t).toLocaleDateString("en-GB", { day: "numeric", month: "short", timeZone: "UTC" })} minTickGap={24} />
                <YAxis allowDecimals={false} width={40} tickFormatter={formatCompact} />
                <Tooltip
                  isAnimationActive={false}
                  cursor={{ fillOpacity: 0.08 }}
                  content={({ active, payload }) => {
                    const p = payload?.[0]?.payload as ReturnType<typeof lateDayPoints>[number] | undefined;
                    if (!active || !p) return null;
                    return (
                      <ChartTooltip
                        title={new Date(p.t).toLocaleDateString("en-GB", { dateStyle: "medium", timeZone: "UTC" })}
                        rows={[
                          { name: "Late", color: COLORS.late, value: formatCount(p.late) },
                          { name: "By a replay", color: COLORS.replay, value: formatCount(p.viaReplay) },
                        ]}
                      />
                    );
                  }}
                />
                <Bar dataKey="late" stackId="l" fill={COLORS.late} isAnimationActive={false} />
                <Bar dataKey="viaReplay" stackId="l" fill={COLORS.replay} isAnimationActive={false} />
              </BarChart>
            </ResponsiveContainer>
          ) : (
            <ChartEmpty>{late.isError ? "Could not be loaded." : "Loading…"}</ChartEmpty>
          )}
        </ChartCard>
      </ChartGrid>
      {metrics.data && <AnnotationList annotations={metrics.data.annotations} />}
    </section>
  );
}

function KeyCharts({ metrics }: { metrics: MetricsResponse }) {
  const points = sampleSeries(metrics);
  const common = timeAxes(metrics);
  const sampled = hasValues(points, "aliveKeys");
  const none = <ChartEmpty>No per-source sample in this range yet: the sampler writes one a minute.</ChartEmpty>;
  const alive = latestOf(points, "aliveKeys");
  const bytes = latestOf(points, "tableBytes");
  const backlog = latestOf(points, "expiryBacklog");
  return (
    <>
      <ChartCard
        title="Alive keys and estimated bytes"
        headline={alive !== null && bytes !== null && <>{formatCount(alive)} keys · ≈{formatBytes(bytes)}</>}
        legend={
          <ChartLegend
            items={[
              { name: "Estimated bytes (its share of the table)", color: COLORS.bytes },
              { name: "Alive keys (right axis)", color: COLORS.alive },
            ]}
          />
        }
      >
        {sampled ? (
          <TimeSeriesChart<SamplePoint>
            {...common}
            data={points}
            series={[
              { key: "tableBytes", name: "Estimated bytes", color: COLORS.bytes },
              { key: "aliveKeys", name: "Alive keys", color: COLORS.alive, axis: "right" },
            ]}
            bands={metrics.step > 60 ? [{ low: "aliveKeysMin", high: "aliveKeysMax", color: COLORS.alive, axis: "right" }] : []}
            formatLeft={formatBytes}
            leftTicks={byteTicks(peakOf(points, "tableBytes") ?? 0)}
            formatRight={formatCompact}
          />
        ) : (
          none
        )}
      </ChartCard>
      <ChartCard
        title="Expiry backlog"
        headline={backlog !== null && <>{formatCount(backlog)} at the last sample · peak {formatCount(peakOf(points, "expiryBacklog") ?? 0)}</>}
        legend={<ChartLegend items={[{ name: "Expired, not yet pruned", color: COLORS.backlog }]} />}
      >
        {sampled ? (
          <TimeSeriesChart<SamplePoint> {...common} data={points} series={[{ key: "expiryBacklog", name: "Expired, not pruned", color: COLORS.backlog }]} formatLeft={formatCount} />
        ) : (
          none
        )}
      </ChartCard>
      <ClaimsChart title="Claims and duplicates" points={points} axes={common} empty={sampled ? null : none} />
    </>
  );
}
