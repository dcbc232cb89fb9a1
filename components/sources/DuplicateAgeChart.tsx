"use client";

import { Bar, BarChart, CartesianGrid, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { ChartCard, ChartEmpty } from "@/components/charts/ChartCard";
import { CHART_COLORS } from "@/components/charts/colors";
import { ChartLegend, ChartTooltip } from "@/components/charts/ChartTooltip";
import { formatCount } from "@/components/ui/format";
import { humanDuration } from "@/lib/retention/advisor";
import type { AdviceResponse } from "@/lib/retention/advice-schema";
import { formatCompact } from "@/components/ui/format";
import { agePosition, histogramBars } from "./advisor-view";
import styles from "./advisor.module.css";
import chartStyles from "@/components/charts/charts.module.css";

const COLORS = { bars: CHART_COLORS.duplicates, ttl: CHART_COLORS.backlog, retry: CHART_COLORS.bytes };

/**
 * How old keys were when their duplicates arrived, one bar per fixed bucket (≤ 1 s … ≤ 90 d, > 90 d),
 * with the source's TTL and retry window drawn where they fall: bars right of the retry window are
 * retries later than the sender was declared to make; a late duplicate would be right of the TTL (those
 * are in the table below, since their keys had expired). Display only (advisor-view.ts).
 */
export function DuplicateAgeChart({ advice, retryWindowSeconds }: { advice: AdviceResponse; retryWindowSeconds: number }) {
  const bars = histogramBars(advice.observed.histogram);
  const o = advice.observed;
  const ttl = advice.current.ttlSeconds;
  const retryAt = agePosition(retryWindowSeconds, advice.observed.histogram);
  const ttlAt = agePosition(ttl, advice.observed.histogram);
  // The lines' names are in the legend; on the plot too only when they are far enough apart not to
  // overlap (4 buckets), and never on a phone (the labels' CSS), where any two would collide.
  const labelled = Math.abs(ttlAt - retryAt) >= 4;
  return (
    <ChartCard
      title={`Age of each duplicate when it arrived (last ${advice.window})`}
      label="Duplicate ages"
      testId="duplicate-age-chart"
      plot={false}
      headline={
        o.duplicates > 0 && (
          <>
            {formatCount(o.duplicates)} duplicates · p99.9 ≤ {humanDuration(o.ageP999Seconds ?? 0)} · oldest {humanDuration(o.maxAgeSeconds ?? 0)}
          </>
        )
      }
      legend={
        <ChartLegend
          items={[
            { name: "Duplicates", color: COLORS.bars, bar: true },
            { name: `TTL ${humanDuration(ttl)}`, color: COLORS.ttl, dashed: true },
            { name: `Retry window ${humanDuration(retryWindowSeconds)}`, color: COLORS.retry, dashed: true },
          ]}
        />
      }
    >
      {o.duplicates === 0 ? (
        <ChartEmpty>No duplicate in the last {advice.window}: nothing has been delivered twice while its key was alive.</ChartEmpty>
      ) : (
        <div className={styles.histogramPlot}>
          <ResponsiveContainer width="100%" height="100%" className={chartStyles.chart}>
            <BarChart data={bars} margin={{ top: 24, right: 16, bottom: 0, left: 4 }} barCategoryGap="12%">
              <CartesianGrid strokeDasharray="3 3" className={chartStyles.grid} vertical={false} />
              <XAxis
                dataKey="x"
                type="number"
                domain={[-0.5, bars.length - 0.5]}
                ticks={bars.map((b) => b.x)}
                // Every bucket labelled where the labels fit (1440); on a phone recharts drops the ones that
                // would overlap (they ran into one unreadable smear), keeping the first and the last.
                interval="preserveStartEnd"
                minTickGap={2}
                tickFormatter={(x: number) => bars[x]?.label ?? ""}
                angle={-35}
                textAnchor="end"
                height={56}
                tick={{ fontSize: 11 }}
                allowDataOverflow
              />
              <YAxis tickFormatter={formatCompact} width={48} allowDecimals={false} />
              <Tooltip
                isAnimationActive={false}
                cursor={{ fillOpacity: 0.08 }}
                content={({ active, payload }) => {
                  const b = payload?.[0]?.payload as (typeof bars)[number] | undefined;
                  if (!active || !b) return null;
                  return <ChartTooltip title={`Arrived ${b.range} after the first delivery`} rows={[{ name: "Duplicates", color: COLORS.bars, value: formatCount(b.count) }]} />;
                }}
              />
              <Bar dataKey="count" name="Duplicates" fill={COLORS.bars} isAnimationActive={false} />
              <ReferenceLine
                x={retryAt}
                stroke={COLORS.retry}
                strokeDasharray="5 4"
                strokeWidth={2}
                label={
                  labelled
                    ? { value: `retry window ${humanDuration(retryWindowSeconds)}`, position: "insideTopRight", fill: COLORS.retry, fontSize: 11, className: styles.lineLabel }
                    : undefined
                }
              />
              <ReferenceLine
                x={ttlAt}
                stroke={COLORS.ttl}
                strokeDasharray="5 4"
                strokeWidth={2}
                label={labelled ? { value: `TTL ${humanDuration(ttl)}`, position: "top", fill: COLORS.ttl, fontSize: 11, className: styles.lineLabel } : undefined}
              />
            </BarChart>
          </ResponsiveContainer>
        </div>
      )}
      <table className="visually-hidden" data-testid="duplicate-age-table">
        <caption>Duplicates by age when they arrived</caption>
        <thead>
          <tr>
            <th scope="col">Age</th>
            <th scope="col">Duplicates</th>
          </tr>
        </thead>
        <tbody>
          {bars.map((b) => (
            <tr key={b.x}>
              <td>{b.label}</td>
              <td>{b.count}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ChartCard>
  );
}
