/**
 * Client side of a source's page: query keys and react-query options for its advice, late duplicates
 * and charts (app/api/v1/sources/{name}/advice, …/late-duplicates, /api/v1/metrics?source=), and the edit
 * preview (POST …/preview). Responses are checked against the shared zod schemas.
 */
import { keepPreviousData, queryOptions } from "@tanstack/react-query";
import { api, apiParsed, retryUnlessClientError } from "@/components/api";
import { adviceSchema, lateDuplicatesPageSchema, type AdviceResponse, type LateDuplicatesPage } from "@/lib/retention/advice-schema";
import { METRICS_RANGES, metricsResponseSchema, type MetricsRange, type MetricsResponse } from "@/lib/metrics/schema";
import type { z } from "zod";
import type { SourceItem, SourcePreview } from "./queries";
import type { UpdateSourceBody } from "./source-form";

const base = (name: string) => `/api/v1/sources/${encodeURIComponent(name)}`;

const checked = <T>(path: string, schema: z.ZodType<T>, what: string, signal: AbortSignal) =>
  apiParsed(path, schema, `the server's ${what} does not match this console version`, signal);

export const sourcePageKeys = {
  all: (name: string) => ["source-page", name] as const,
  advice: (name: string, window: string) => [...sourcePageKeys.all(name), "advice", window] as const,
  late: (name: string, window: string, cursor: string | null) => [...sourcePageKeys.all(name), "late", window, cursor] as const,
  metrics: (name: string, range: MetricsRange) => [...sourcePageKeys.all(name), "metrics", range] as const,
};

/** The advisor is evidence over days: re-read every 5 minutes (late duplicates show within ~3). */
export const ADVICE_REFRESH_MS = 5 * 60_000;

export function adviceQuery(name: string, window: string) {
  return queryOptions({
    queryKey: sourcePageKeys.advice(name, window),
    queryFn: async ({ signal }): Promise<AdviceResponse> =>
      checked(`${base(name)}/advice?window=${encodeURIComponent(window)}`, adviceSchema, "advice", signal),
    refetchInterval: ADVICE_REFRESH_MS,
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
}

export function lateDuplicatesQuery(name: string, window: string, cursor: string | null) {
  return queryOptions({
    queryKey: sourcePageKeys.late(name, window, cursor),
    queryFn: async ({ signal }): Promise<LateDuplicatesPage> => {
      const qs = new URLSearchParams({ window, limit: "20", ...(cursor ? { cursor } : {}) });
      return checked(`${base(name)}/late-duplicates?${qs}`, lateDuplicatesPageSchema, "late duplicates", signal);
    },
    refetchInterval: ADVICE_REFRESH_MS,
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
}

export function sourceMetricsQuery(name: string, range: MetricsRange) {
  return queryOptions({
    queryKey: sourcePageKeys.metrics(name, range),
    queryFn: async ({ signal }): Promise<MetricsResponse> => {
      const to = new Date();
      const from = new Date(to.getTime() - METRICS_RANGES[range] * 1000);
      const qs = new URLSearchParams({ from: from.toISOString(), to: to.toISOString(), source: name });
      return checked(`/api/v1/metrics?${qs}`, metricsResponseSchema, "metrics", signal);
    },
    refetchInterval: 60_000,
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
}

export function sourceQuery(name: string) {
  return queryOptions({
    queryKey: [...sourcePageKeys.all(name), "source"] as const,
    queryFn: ({ signal }) => api<SourceItem>(base(name), { signal }),
    retry: retryUnlessClientError,
  });
}

export function previewSource(name: string, body: UpdateSourceBody, signal?: AbortSignal) {
  return api<SourcePreview>(`${base(name)}/preview`, { method: "POST", body, signal });
}
