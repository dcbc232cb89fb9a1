/**
 * Client side of one dead letter (app/api/v1/dead-letters/{id}, …/attempts): its query keys and queries.
 */
import { infiniteQueryOptions, queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError } from "@/components/api";
import type { DeadLetterDetail } from "@/lib/deadletters/schema";
import type { AttemptPage } from "@/lib/replay/schema";

export const ATTEMPTS_PAGE_SIZE = 20;

export const deadLetterKeys = {
  all: ["dead-letter"] as const,
  one: (id: string) => [...deadLetterKeys.all, id] as const,
  attempts: (id: string) => [...deadLetterKeys.all, id, "attempts"] as const,
};

export function deadLetterQuery(id: string) {
  return queryOptions({
    queryKey: deadLetterKeys.one(id),
    queryFn: ({ signal }) => api<DeadLetterDetail>(`/api/v1/dead-letters/${encodeURIComponent(id)}`, { signal }),
    retry: retryUnlessClientError,
  });
}

/** The letter's replay attempts, newest first, page by page (the list's cursor). */
export function attemptsQuery(id: string) {
  return infiniteQueryOptions({
    queryKey: deadLetterKeys.attempts(id),
    queryFn: ({ pageParam, signal }) => {
      const params = new URLSearchParams({ limit: String(ATTEMPTS_PAGE_SIZE) });
      if (pageParam) params.set("cursor", pageParam);
      return api<AttemptPage>(`/api/v1/dead-letters/${encodeURIComponent(id)}/attempts?${params}`, { signal });
    },
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next,
    retry: retryUnlessClientError,
  });
}
