import type { Metadata } from "next";
import { SourcePage } from "@/components/sources/SourcePage";
import { metricsRange } from "@/lib/metrics/schema";
import { ADVICE_WINDOWS, DEFAULT_ADVICE_WINDOW, type AdviceWindow } from "@/components/sources/advisor-view";

export const metadata: Metadata = { title: "Source" };

/**
 * /sources/{name}: one source — is its TTL right for the traffic that arrives (the advisor), its
 * duplicate ages, late duplicates and charts. `?window=7d|30d|90d` the advisor's window, `?range=` the
 * charts'. Every signed-in role; "apply" for admins.
 */
export default async function Page({
  params,
  searchParams,
}: {
  params: Promise<{ name: string }>;
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const { name } = await params;
  const q = await searchParams;
  const window = (ADVICE_WINDOWS as readonly string[]).includes(String(q.window)) ? (q.window as AdviceWindow) : DEFAULT_ADVICE_WINDOW;
  const range = metricsRange.safeParse(q.range);
  return <SourcePage name={decode(name)} window={window} range={range.success ? range.data : "7d"} />;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
