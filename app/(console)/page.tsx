import type { Metadata } from "next";
import { OverviewPage } from "@/components/overview/OverviewPage";
import { metricsRange } from "@/lib/metrics/schema";
import { defaultMetricsRange } from "@/lib/metrics/default-range";
import { sourceName } from "@/lib/claims/schema";

export const metadata: Metadata = { title: "Overview" };

/**
 * The Overview; `?range=1h|24h|7d|30d` picks the charts' range (anything else: one that follows the data,
 * lib/metrics/default-range.ts), `?source=` shows one source's figures in the charts.
 */
export default async function Page({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const q = await searchParams;
  const parsed = metricsRange.safeParse(q.range);
  const source = sourceName.safeParse(q.source);
  return <OverviewPage range={parsed.success ? parsed.data : await defaultMetricsRange()} source={source.success ? source.data : null} />;
}
