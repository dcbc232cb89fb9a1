"use client";

import type { ReactNode } from "react";
import { Bar, CartesianGrid, ComposedChart, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { annotationLines, type Annotation } from "./annotations";
import styles from "./charts.module.css";
import { ChartTooltip } from "./ChartTooltip";

type Props<P extends { t: number }> = {
  data: P[];
  /** Drawn as bars against the left axis. */
  bar: { key: keyof P & string; name: string; color: string; format: (v: number) => string };
  /** Drawn as a line with a dot per point against the right axis. */
  line: { key: keyof P & string; name: string; color: string; format: (v: number) => string };
  domain: [number, number];
  ticks: number[];
  formatX: (t: number) => string;
  formatTime: (t: number) => string;
  tooltipNote?: (point: P) => ReactNode;
  height?: number;
  annotations?: readonly Annotation[];
};

/**
 * Events over time, each with an amount (bar) and a rate (line): e.g. prune runs with the rows each
 * deleted and its rows per second. Display only; points come prepared (chart-data.ts).
 */
export function BarLineChart<P extends { t: number }>({ data, bar, line, domain, ticks, formatX, formatTime, tooltipNote, height = 220, annotations = [] }: Props<P>) {
  return (
    <ResponsiveContainer width="100%" height={height} className={styles.chart}>
      <ComposedChart data={data} margin={{ top: 8, right: 4, bottom: 0, left: 4 }}>
        <CartesianGrid strokeDasharray="3 3" className={styles.grid} vertical={false} />
        <XAxis dataKey="t" type="number" scale="time" domain={domain} ticks={ticks} tickFormatter={formatX} allowDataOverflow minTickGap={24} />
        <YAxis yAxisId="left" tickFormatter={bar.format} width={64} allowDecimals={false} />
        <YAxis yAxisId="right" orientation="right" tickFormatter={line.format} width={56} allowDecimals={false} />
        <Tooltip
          isAnimationActive={false}
          cursor={{ fillOpacity: 0.08 }}
          content={({ active, payload, label }) => {
            const point = payload?.[0]?.payload as P | undefined;
            if (!active || !point) return null;
            const value = (key: keyof P, format: (v: number) => string) => {
              const v = point[key];
              return typeof v === "number" ? format(v) : "—";
            };
            return (
              <ChartTooltip
                title={formatTime(Number(label))}
                rows={[
                  { name: bar.name, color: bar.color, value: value(bar.key, bar.format) },
                  { name: line.name, color: line.color, value: value(line.key, line.format) },
                ]}
                note={tooltipNote?.(point)}
              />
            );
          }}
        />
        {annotationLines(annotations)}
        <Bar yAxisId="left" dataKey={(p: P) => p[bar.key] as number} name={bar.name} fill={bar.color} barSize={6} isAnimationActive={false} />
        <Line
          yAxisId="right"
          dataKey={line.key}
          name={line.name}
          stroke={line.color}
          strokeWidth={2}
          dot={{ r: 2.5, fill: line.color, strokeWidth: 0 }}
          connectNulls={false}
          isAnimationActive={false}
          type="linear"
        />
      </ComposedChart>
    </ResponsiveContainer>
  );
}
