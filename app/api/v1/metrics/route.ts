/**
 * GET /api/v1/metrics?from&to — the metrics history for the Overview's charts: the sampler's samples of
 * the dedup table and the pruner's runs between two ISO timestamps (default: the last 24 hours; at most
 * 31 days; long ranges come bucketed, `step` says how coarse). Callers: scope read (and the console).
 * Response: lib/metrics/schema.ts.
 */
import { getMetricsHistory } from "@/lib/metrics/history";
import { metricsQuery, metricsResponseSchema } from "@/lib/metrics/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ query }) => json(await getMetricsHistory(query)), {
  allow: ["read"],
  query: metricsQuery,
  summary: "The metrics history for the Overview's charts",
  responses: { 200: { description: "Samples and prune runs, bucketed by step", schema: metricsResponseSchema } },
});
