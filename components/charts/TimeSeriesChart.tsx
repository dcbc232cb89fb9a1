"use client";

import type { ReactNode } from "react";
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import styles from "./charts.module.css";
import { ChartTooltip, type TooltipRow } from "./ChartTooltip";

export type LineSeries<P> = {
  key: keyof P & string;
  name: string;
  color: string;
  /** Which y axis the series is read against (default left). */
  axis?: "left" | "right";
  dashed?: boolean;
};

type Props<P extends { t: number; isolated?: boolean }> = {
  data: P[];
  series: LineSeries<P>[];
  /** The x range in ms: the whole requested range, so a gap at either end shows as a gap. */
  domain: [number, number];
  ticks: number[];
  formatX: (t: number) => string;
  formatTime: (t: number) => string;
  formatLeft: (v: number) => string;
  /** Left-axis ticks when recharts' decimal ones would not read well (bytes); the axis spans them. */
  leftTicks?: number[];
  formatRight?: (v: number) => string;
  /** Extra line under a tooltip's values (e.g. "backlog count stopped at its cap"). */
  tooltipNote?: (point: P) => ReactNode;
  height?: number;
};

/**
 * Lines over time. Display only: the points come prepared (chart-data.ts); null values are gaps and stay
 * gaps (connectNulls off), and a sample with gaps on both sides gets a dot, since a line needs two points.
 */
export function TimeSeriesChart<P extends { t: number; isolated?: boolean }>({
  data,
  series,
  domain,
  ticks,
  formatX,
  formatTime,
  formatLeft,
  leftTicks,
  formatRight,
  tooltipNote,
  height = 220,
}: Props<P>) {
  const hasRight = series.some((s) => s.axis === "right");
  return (
    <ResponsiveContainer width="100%" height={height} className={styles.chart}>
      <LineChart data={data} margin={{ top: 8, right: hasRight ? 4 : 16, bottom: 0, left: 4 }}>
        <CartesianGrid strokeDasharray="3 3" className={styles.grid} vertical={false} />
        <XAxis
          dataKey="t"
          type="number"
          scale="time"
          domain={domain}
          ticks={ticks}
          tickFormatter={formatX}
          allowDataOverflow
          minTickGap={24}
        />
        <YAxis
          yAxisId="left"
          tickFormatter={formatLeft}
          width={64}
          allowDecimals={false}
          ticks={leftTicks}
          domain={leftTicks ? [0, leftTicks[leftTicks.length - 1]] : undefined}
        />
        {hasRight && <YAxis yAxisId="right" orientation="right" tickFormatter={formatRight ?? formatLeft} width={56} allowDecimals={false} />}
        <Tooltip
          isAnimationActive={false}
          content={({ active, payload, label }) => {
            const point = payload?.[0]?.payload as P | undefined;
            if (!active || !point) return null;
            const rows: TooltipRow[] = series.map((s) => {
              const v = point[s.key];
              const format = s.axis === "right" && formatRight ? formatRight : formatLeft;
              return { name: s.name, color: s.color, value: typeof v === "number" ? format(v) : "no sample" };
            });
            return <ChartTooltip title={formatTime(Number(label))} rows={rows} note={tooltipNote?.(point)} />;
          }}
        />
        {series.map((s) => (
          <Line
            key={s.key}
            yAxisId={s.axis ?? "left"}
            dataKey={s.key}
            name={s.name}
            stroke={s.color}
            strokeWidth={2}
            strokeDasharray={s.dashed ? "5 4" : undefined}
            connectNulls={false}
            isAnimationActive={false}
            dot={(props: { cx?: number; cy?: number; payload?: P; index?: number }) =>
              props.payload?.isolated && props.cx !== undefined && props.cy !== undefined ? (
                <circle key={`${s.key}-${props.index}`} cx={props.cx} cy={props.cy} r={2.5} fill={s.color} />
              ) : (
                <g key={`${s.key}-${props.index}`} />
              )
            }
            type="linear"
          />
        ))}
      </LineChart>
    </ResponsiveContainer>
  );
}
