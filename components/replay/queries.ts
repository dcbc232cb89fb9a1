/**
 * Client side of replay (app/api/v1/dead-letters, app/api/v1/replays): query keys, the queries, and the
 * changes (preflight, extend, start, pause/resume/cancel). Shapes per the replay API contract.
 */
import { infiniteQueryOptions, queryOptions } from "@tanstack/react-query";
import { api, apiParsed, retryUnlessClientError } from "@/components/api";
import { filterParams, type DeadLetterFilters } from "./dead-letter-list";
import { pollInterval } from "./progress";
import { type PreflightBody, type ReplayBody } from "./wizard";
import type { DeadLetterList as DeadLetterPage } from "@/lib/deadletters/schema";
import { extendPreflightSchema, preflightSchema, type Preflight, type Replay, type ReplayItemResult, type ReplaySummary } from "@/lib/replay/schema";
import type { ReplayOutcome, ReplayState } from "@/lib/replay/outcome";

/** The replays list's filter (GET /api/v1/replays?state&outcome). */
export type ReplayListFilter = { state?: ReplayState; outcome?: ReplayOutcome };

export const DEAD_LETTER_PAGE_SIZE = 100;
/** The warning panel reads this many of the soonest-expiring pending dead letters. */
export const KEY_RISK_LIMIT = 50;

export const replayKeys = {
  all: ["replay"] as const,
  deadLetters: (filters: DeadLetterFilters) => [...replayKeys.all, "dead-letters", filters] as const,
  keyRisk: (source: string | undefined) => [...replayKeys.all, "key-risk", source ?? null] as const,
  replays: (filter: ReplayListFilter = {}) => [...replayKeys.all, "replays", filter] as const,
  replay: (id: string) => [...replayKeys.all, "replay", id] as const,
};

/** The dead-letter list, page by page (keyset cursor), with the counts the server sends on every page. */
export function deadLettersQuery(filters: DeadLetterFilters) {
  return infiniteQueryOptions({
    queryKey: replayKeys.deadLetters(filters),
    queryFn: ({ pageParam, signal }) => {
      const params = filterParams(filters, { limit: String(DEAD_LETTER_PAGE_SIZE) });
      if (pageParam) params.set("cursor", pageParam);
      return api<DeadLetterPage>(`/api/v1/dead-letters?${params}`, { signal });
    },
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next,
    retry: retryUnlessClientError,
  });
}

/** Pending dead letters whose keys expire soonest (or already did) first: the warning panel. */
export function keyRiskQuery(source: string | undefined) {
  return queryOptions({
    queryKey: replayKeys.keyRisk(source),
    queryFn: ({ signal }) => {
      const params = filterParams({ source, status: "pending" }, { sort: "keyExpiry", limit: String(KEY_RISK_LIMIT) });
      return api<DeadLetterPage>(`/api/v1/dead-letters?${params}`, { signal });
    },
    retry: retryUnlessClientError,
    refetchInterval: 60_000,
  });
}

export function replaysQuery(filter: ReplayListFilter = {}) {
  return queryOptions({
    queryKey: replayKeys.replays(filter),
    queryFn: ({ signal }) => {
      const params = new URLSearchParams();
      if (filter.state) params.set("state", filter.state);
      if (filter.outcome) params.set("outcome", filter.outcome);
      const q = params.toString();
      return api<{ items: ReplaySummary[]; next: string | null }>(`/api/v1/replays${q ? `?${q}` : ""}`, { signal });
    },
    retry: retryUnlessClientError,
    refetchInterval: 10_000,
  });
}

/** One replay: polled every second while it runs (pollInterval), not at all once it finished. */
export function replayQuery(id: string) {
  return queryOptions({
    queryKey: replayKeys.replay(id),
    queryFn: ({ signal }) => api<Replay>(`/api/v1/replays/${encodeURIComponent(id)}`, { signal }),
    retry: retryUnlessClientError,
    refetchInterval: (q) => pollInterval(q.state.data?.status),
  });
}

/** A preflight answer that does not match lib/replay/schema.ts preflightSchema (a server and console of different versions). */
const PREFLIGHT_MISMATCH = "the server's preflight does not match what this console expects";

/** Operators. A new preflight of a finished replay's failed (and skipped) items still pending. */
export function retryFailedItems(replayId: string) {
  return apiParsed<Preflight>(`/api/v1/replays/${encodeURIComponent(replayId)}/retry-failed`, preflightSchema, PREFLIGHT_MISMATCH, undefined, { method: "POST", body: {} });
}

/** Operators. Classifies the selected pending dead letters; valid 15 minutes. */
export function runPreflight(body: PreflightBody) {
  return apiParsed<Preflight>("/api/v1/replays/preflight", preflightSchema, PREFLIGHT_MISMATCH, undefined, { method: "POST", body });
}

/** Operators. Extends the alive and expiring keys of this preflight to cover the replay window. */
export function extendPreflight(id: string) {
  return apiParsed(`/api/v1/replays/preflight/${encodeURIComponent(id)}/extend`, extendPreflightSchema, PREFLIGHT_MISMATCH, undefined, {
    method: "POST",
    body: {},
  });
}

/** Operators. The same Idempotency-Key with the same body starts one replay, however often it is sent. */
export function startReplay(body: ReplayBody, idempotencyKey: string) {
  return api<{ replayId: string }>("/api/v1/replays", { method: "POST", body, headers: { "idempotency-key": idempotencyKey } });
}

/** Operators. An item waiting for its retry is attempted at once; 409 when it is not waiting. */
export function retryItemNow(replayId: string, deadLetterId: string) {
  return api<ReplayItemResult>(`/api/v1/replays/${encodeURIComponent(replayId)}/items/${encodeURIComponent(deadLetterId)}/retry-now`, { method: "POST", body: {} });
}

export type ReplayControl = "pause" | "resume" | "cancel";

/** Operators. 409 when the replay's state does not allow it. */
export function controlReplay(id: string, action: ReplayControl) {
  return api<ReplaySummary>(`/api/v1/replays/${encodeURIComponent(id)}/${action}`, { method: "POST", body: {} });
}

/** A fresh Idempotency-Key: crypto.randomUUID where the page is a secure context, random bytes otherwise. */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
