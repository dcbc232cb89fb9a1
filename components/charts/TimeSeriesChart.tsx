"use client";

import type { ReactNode } from "react";
import { Area, CartesianGrid, ComposedChart, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { annotationLines, type Annotation } from "./annotations";
import styles from "./charts.module.css";
import { ChartTooltip, type TooltipRow } from "./ChartTooltip";
import { isLonePoint } from "./gaps";

export type LineSeries<P> = {
  key: keyof P & string;
  name: string;
  color: string;
  /** Which y axis the series is read against (default left). */
  axis?: "left" | "right";
  dashed?: boolean;
};

/** The spread inside each bucket of a series (its lowest and highest minute), drawn as a band behind its line. */
export type Band<P> = { low: keyof P & string; high: keyof P & string; color: string; axis?: "left" | "right" };


type Props<P extends { t: number }> = {
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
  bands?: Band<P>[];
  annotations?: Annotation[];
};

/**
 * Lines over time. Display only: the points come prepared (chart-data.ts); null values are gaps and stay
 * gaps (connectNulls off), and a value with gaps on both sides in its own series gets a dot, since a line
 * needs two points (gaps.ts isLonePoint).
 * `bands` shade each bucket's min–max behind a line; `annotations` mark configuration changes (their list,
 * readable without hovering, is the card's: AnnotationList).
 */
export function TimeSeriesChart<P extends { t: number }>({
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
  bands = [],
  annotations = [],
}: Props<P>) {
  const hasRight = series.some((s) => s.axis === "right");
  return (
    <ResponsiveContainer width="100%" height={height} className={styles.chart}>
      <ComposedChart data={data} margin={{ top: 8, right: hasRight ? 4 : 16, bottom: 0, left: 4 }}>
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
        {bands.map((b) => (
          <Area
            key={`${b.low}-${b.high}`}
            yAxisId={b.axis ?? "left"}
            dataKey={(p: P) => (typeof p[b.low] === "number" && typeof p[b.high] === "number" ? [p[b.low], p[b.high]] : null)}
            stroke="none"
            fill={b.color}
            fillOpacity={0.14}
            connectNulls={false}
            isAnimationActive={false}
            activeDot={false}
            tooltipType="none"
            legendType="none"
          />
        ))}
        {annotationLines(annotations)}
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
            // A dot only where this series has a lone value between gaps (its own gaps: another series may have a value there).
            dot={(props: { cx?: number; cy?: number; index?: number }) =>
              props.index !== undefined && isLonePoint(data, props.index, s.key) && props.cx != null && props.cy != null ? (
                <circle key={`${s.key}-${props.index}`} cx={props.cx} cy={props.cy} r={3} fill={s.color} data-lone-point={s.key} />
              ) : (
                <g key={`${s.key}-${props.index}`} />
              )
            }
            type="linear"
          />
        ))}
      </ComposedChart>
    </ResponsiveContainer>
  );
}
