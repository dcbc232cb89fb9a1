/**
 * Client side of the metrics history: query keys and react-query options for the Overview's charts.
 * Each fetch asks for the range ending now, so the refresh every minute slides the window along.
 */
import { keepPreviousData, queryOptions } from "@tanstack/react-query";
import { ApiError, getJson, retryUnlessClientError } from "../http/client";
import { METRICS_RANGES, metricsResponseSchema, type MetricsRange, type MetricsResponse } from "./schema";

/** The sampler writes once a minute; reading more often would show nothing new. */
export const METRICS_REFRESH_MS = 60_000;

export const metricsKeys = {
  all: ["metrics"] as const,
  range: (range: MetricsRange, source: string | null = null) => [...metricsKeys.all, range, source] as const,
};

/** The charts of `range`, of the whole table or (`source`) of one source. */
export function metricsQuery(range: MetricsRange, source: string | null = null) {
  return queryOptions({
    queryKey: metricsKeys.range(range, source),
    queryFn: async ({ signal }): Promise<MetricsResponse> => {
      const to = new Date();
      const from = new Date(to.getTime() - METRICS_RANGES[range] * 1000);
      const params = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), ...(source ? { source } : {}) });
      const parsed = metricsResponseSchema.safeParse(await getJson(`/api/v1/metrics?${params}`, signal));
      if (!parsed.success) {
        throw new ApiError(200, "unexpected_response", "the server's metrics do not match this console version; reload the page");
      }
      return parsed.data;
    },
    refetchInterval: METRICS_REFRESH_MS,
    // Switching ranges keeps the previous charts on screen (marked as updating) until the new ones arrive.
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
}
