"use client";

import { Segmented } from "@/components/ui/Segmented";
import { METRICS_RANGES, type MetricsRange } from "@/lib/metrics/schema";

export const RANGE_LABELS: Record<MetricsRange, string> = { "1h": "1 hour", "24h": "24 hours", "7d": "7 days", "30d": "30 days" };

/**
 * The charts' time range, kept in the URL (?range=7d) so a view can be bookmarked and shared. `keep`: the
 * other query parameters of the page, kept as they are (the Overview's source, a source page's window).
 */
export function RangePicker({ value, keep = {} }: { value: MetricsRange; keep?: Record<string, string | null> }) {
  const rest = Object.entries(keep)
    .filter((e): e is [string, string] => e[1] !== null)
    .map(([k, v]) => `&${k}=${encodeURIComponent(v)}`)
    .join("");
  return (
    <Segmented
      label="Time range"
      value={value}
      segments={(Object.keys(METRICS_RANGES) as MetricsRange[]).map((r) => ({ value: r, href: `?range=${r}${rest}`, title: `Last ${RANGE_LABELS[r]}` }))}
    />
  );
}
