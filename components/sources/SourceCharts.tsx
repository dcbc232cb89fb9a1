"use client";

import { formatBytes, formatCompact } from "@/components/ui/format";
import Link from "next/link";
import type { ReactNode } from "react";
import { useQuery } from "@tanstack/react-query";
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { ChartLegend, ChartTooltip } from "@/components/charts/ChartTooltip";
import { TimeSeriesChart } from "@/components/charts/TimeSeriesChart";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { formatCount } from "@/components/ui/format";
import { METRICS_RANGES, type MetricsRange } from "@/lib/metrics/schema";
import {
  byteTicks,
  formatAxisTime,
  formatPointTime,
  hasValues,
  latestOf,
  peakOf,
  sampleSeries,
  timeTicks,
  type SamplePoint,
} from "@/components/overview/chart-data";
import { lateDayPoints } from "./advisor-prepare";
import { lateDuplicatesQuery, sourceMetricsQuery } from "./advisor-queries";

const COLORS = { bytes: "#3b6fe0", alive: "#16a34a", backlog: "#c2410c", claims: "#3b6fe0", duplicates: "#db2777", late: "#b91c1c", replay: "#f59e0b" };

function ChartCard({ title, headline, legend, children }: { title: string; headline?: ReactNode; legend?: ReactNode; children: ReactNode }) {
  return (
    <section className="chart-card" aria-label={title}>
      <header className="chart-card__header">
        <h3 className="chart-card__title">{title}</h3>
        {headline && <div className="chart-card__headline">{headline}</div>}
      </header>
      {legend}
      <div className="chart-card__plot">{children}</div>
    </section>
  );
}

/**
 * The source's own charts: its alive keys and their estimated bytes (its share of the table), its expiry
 * backlog, its claims against duplicates (from the sampler's per-source figures), and its late duplicates
 * per day. Loads its own data; display through the Overview's chart components and preparation.
 */
export function SourceCharts({ name, range, window }: { name: string; range: MetricsRange; window: string }) {
  const metrics = useQuery(sourceMetricsQuery(name, range));
  const late = useQuery(lateDuplicatesQuery(name, window, null));
  return (
    <section className="metrics" aria-label={`${name} over time`}>
      <div className="metrics__header">
        <h2 className="section-title">{name} over time</h2>
        <nav className="segmented" aria-label="Time range">
          {(Object.keys(METRICS_RANGES) as MetricsRange[]).map((r) => (
            <Link
              key={r}
              href={`?window=${window}&range=${r}`}
              scroll={false}
              replace
              className={r === range ? "segmented__item segmented__item--active" : "segmented__item"}
              aria-current={r === range ? "true" : undefined}
            >
              {r}
            </Link>
          ))}
        </nav>
      </div>
      {metrics.isError && !metrics.data && <ErrorBox title="The charts could not be loaded" error={metrics.error} onRetry={() => void metrics.refetch()} />}
      <div className="chart-grid-layout">
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
            <ResponsiveContainer width="100%" height={220}>
              <BarChart data={lateDayPoints(late.data.perDay)} margin={{ top: 8, right: 16, bottom: 0, left: 4 }}>
                <CartesianGrid strokeDasharray="3 3" className="chart-grid" vertical={false} />
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
            <p className="chart-card__empty muted">{late.isError ? "Could not be loaded." : "Loading…"}</p>
          )}
        </ChartCard>
      </div>
    </section>
  );
}

function KeyCharts({ metrics }: { metrics: import("@/lib/metrics/schema").MetricsResponse }) {
  const from = Date.parse(metrics.from);
  const to = Date.parse(metrics.to);
  const points = sampleSeries(metrics);
  const common = {
    domain: [from, to] as [number, number],
    ticks: timeTicks(from, to),
    formatX: (t: number) => formatAxisTime(t, to - from),
    formatTime: (t: number) => formatPointTime(t),
  };
  const sampled = hasValues(points, "aliveKeys");
  const none = <p className="chart-card__empty muted">No per-source sample in this range yet: the sampler writes one a minute.</p>;
  const alive = latestOf(points, "aliveKeys");
  const bytes = latestOf(points, "tableBytes");
  const backlog = latestOf(points, "expiryBacklog");
  const claims = points.reduce((n, p) => n + (p.claims ?? 0), 0);
  const duplicates = points.reduce((n, p) => n + (p.duplicates ?? 0), 0);
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
      <ChartCard
        title="Claims and duplicates"
        headline={sampled && <>{formatCount(claims)} claims · {formatCount(duplicates)} duplicates</>}
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
          none
        )}
      </ChartCard>
    </>
  );
}
