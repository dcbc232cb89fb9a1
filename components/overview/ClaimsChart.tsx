"use client";

import type { ReactNode } from "react";
import { ChartCard } from "@/components/charts/ChartCard";
import { CHART_COLORS } from "@/components/charts/colors";
import { ChartLegend } from "@/components/charts/ChartTooltip";
import { TimeSeriesChart } from "@/components/charts/TimeSeriesChart";
import { formatCompact, formatCount } from "@/components/ui/format";
import { claimTotals, type SamplePoint, type timeAxes } from "./chart-data";

/**
 * Claims (new keys) against duplicates over time, with their totals as the headline: the Overview's card
 * (every source) and a source page's (its own). `empty`: shown instead of the plot when nothing was sampled.
 */
export function ClaimsChart({ title, points, axes, empty }: { title: string; points: SamplePoint[]; axes: ReturnType<typeof timeAxes>; empty: ReactNode | null }) {
  const { claims, duplicates } = claimTotals(points);
  return (
    <ChartCard
      title={title}
      headline={
        !empty && (
          <>
            {formatCount(claims)} claims · {formatCount(duplicates)} duplicates
          </>
        )
      }
      legend={
        <ChartLegend
          items={[
            { name: "Claims (new keys)", color: CHART_COLORS.claims },
            { name: "Duplicates", color: CHART_COLORS.duplicates },
          ]}
        />
      }
    >
      {empty ?? (
        <TimeSeriesChart<SamplePoint>
          {...axes}
          data={points}
          series={[
            { key: "claims", name: "Claims", color: CHART_COLORS.claims },
            { key: "duplicates", name: "Duplicates", color: CHART_COLORS.duplicates },
          ]}
          formatLeft={formatCompact}
        />
      )}
    </ChartCard>
  );
}
