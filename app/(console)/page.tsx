import type { Metadata } from "next";
import { OverviewPage } from "@/components/overview/OverviewPage";
import { DEFAULT_METRICS_RANGE, metricsRange } from "@/lib/metrics/schema";

export const metadata: Metadata = { title: "Overview" };

/** The Overview; `?range=1h|24h|7d|30d` picks the charts' range (anything else: the last 24 hours). */
export default async function Page({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const parsed = metricsRange.safeParse((await searchParams).range);
  return <OverviewPage range={parsed.success ? parsed.data : DEFAULT_METRICS_RANGE} />;
}
