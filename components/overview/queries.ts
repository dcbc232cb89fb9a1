/**
 * Client side of the Overview: query keys and react-query options for the live figures
 * (GET /api/v1/overview) and the metrics history behind the charts (GET /api/v1/metrics). Both answers
 * are checked against the shared zod schemas (lib/overview/schema.ts, lib/metrics/schema.ts).
 */
import { keepPreviousData, queryOptions } from "@tanstack/react-query";
import { apiParsed, retryUnlessClientError } from "@/components/api";
import { METRICS_RANGES, metricsResponseSchema, type MetricsRange } from "@/lib/metrics/schema";
import { overviewSchema } from "@/lib/overview/schema";
import { SOURCE_ROWS_SHOWN } from "@/lib/overview/source-rows";

/** How often the console re-reads the figures while the tab is visible. */
export const OVERVIEW_REFRESH_MS = 10_000;

/** The sampler writes once a minute; reading more often would show nothing new. */
export const METRICS_REFRESH_MS = 60_000;

/** Which source rows to ask for: the busiest SOURCE_ROWS_SHOWN (the default), or every one; either narrowed by name. */
export type SourceRowsWanted = { q?: string; all?: boolean };

export const overviewKeys = {
  all: ["overview"] as const,
  live: ({ q = "", all = false }: SourceRowsWanted = {}) => [...overviewKeys.all, "live", q, all] as const,
  metrics: (range: MetricsRange, source: string | null = null) => ["metrics", range, source] as const,
};

/**
 * The live figures, with rows for the SOURCE_ROWS_SHOWN busiest sources (every source when there are no more
 * than that): what the Overview's panels share, one request per refresh. The per-source table asks again with
 * `{ q, all }` only while it is filtered or showing every source; the previous rows stay on screen meanwhile.
 */
export function overviewQuery(wanted: SourceRowsWanted = {}) {
  const q = wanted.q?.trim() ?? "";
  const all = wanted.all ?? false;
  const params = new URLSearchParams({ ...(all ? {} : { limit: String(SOURCE_ROWS_SHOWN) }), ...(q ? { q } : {}) });
  return queryOptions({
    queryKey: overviewKeys.live({ q, all }),
    queryFn: ({ signal }) =>
      apiParsed(`/api/v1/overview${params.size ? `?${params}` : ""}`, overviewSchema, "the server's overview does not match this console version", signal),
    refetchInterval: OVERVIEW_REFRESH_MS,
    placeholderData: q || all ? keepPreviousData : undefined,
    retry: retryUnlessClientError,
  });
}

/** Each fetch asks for the range ending now, so the refresh every minute slides the window along. */
/** The charts of `range`, of the whole table or (`source`) of one source. */
export function metricsQuery(range: MetricsRange, source: string | null = null) {
  return queryOptions({
    queryKey: overviewKeys.metrics(range, source),
    queryFn: ({ signal }) => {
      const to = new Date();
      const from = new Date(to.getTime() - METRICS_RANGES[range] * 1000);
      const params = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), ...(source ? { source } : {}) });
      return apiParsed(`/api/v1/metrics?${params}`, metricsResponseSchema, "the server's metrics do not match this console version", signal);
    },
    refetchInterval: METRICS_REFRESH_MS,
    // Switching ranges keeps the previous charts on screen (marked as updating) until the new ones arrive.
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
}
