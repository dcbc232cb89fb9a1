/** Client side of the global search (GET /api/v1/search): its query key and options. */
import { queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError } from "@/components/api";
import type { SearchResponse } from "@/lib/search/schema";

export const searchKeys = { results: (q: string) => ["search", q] as const };

export function searchQueryOptions(q: string) {
  return queryOptions({
    queryKey: searchKeys.results(q),
    queryFn: ({ signal }) => api<SearchResponse>(`/api/v1/search?${new URLSearchParams({ q })}`, { signal }),
    enabled: q.trim().length > 0,
    staleTime: 10_000,
    retry: retryUnlessClientError,
  });
}
