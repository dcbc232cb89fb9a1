/** Client side of sources (app/api/v1/sources, app/api/v1/presets): query keys, the queries, and the changes. */
import { queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError, type AsJson } from "@/components/api";
import type { Preset } from "@/lib/retention/presets";
import type { SourceInfo } from "@/lib/sources/schema";
import type { SourceReport } from "@/lib/sources/sources";
import type { CreateSourceBody, UpdateSourceBody } from "./prepare";

/** A source's settings as create and update answer them. */
export type SourceSettings = AsJson<SourceInfo>;

/** A source as GET /api/v1/sources sends it: its settings, invariant checks and projected size. */
export type SourceItem = AsJson<SourceReport>;

/** A preset as GET /api/v1/presets sends it (lib/retention/presets.ts, with its TTL). */
export type PresetItem = Preset & { ttlSeconds: number };

export const sourceKeys = {
  all: ["sources"] as const,
  list: () => [...sourceKeys.all, "list"] as const,
  presets: () => [...sourceKeys.all, "presets"] as const,
};

export function sourcesQuery() {
  return queryOptions({
    queryKey: sourceKeys.list(),
    queryFn: async ({ signal }) => (await api<{ sources: SourceItem[] }>("/api/v1/sources", { signal })).sources,
    retry: retryUnlessClientError,
  });
}

export function presetsQuery() {
  return queryOptions({
    queryKey: sourceKeys.presets(),
    queryFn: async ({ signal }) => (await api<{ presets: PresetItem[] }>("/api/v1/presets", { signal })).presets,
    retry: retryUnlessClientError,
    // Presets ship with the server: they change with a deploy, not while a page is open.
    staleTime: Infinity,
  });
}

const sourcePath = (name: string) => `/api/v1/sources/${encodeURIComponent(name)}`;

/** Admins. 409 source_exists; 422 with `details.fields`. */
export function createSource(body: CreateSourceBody) {
  return api<SourceSettings>("/api/v1/sources", { method: "POST", body });
}

/** Admins. The new TTL applies to new claims; live keys keep their expiry (see extendLiveKeys). */
export function updateSource(name: string, body: UpdateSourceBody) {
  return api<SourceSettings>(sourcePath(name), { method: "PATCH", body });
}

/** Operators. Extends live keys to the current TTL, never shortens; recorded in the action log. */
export function extendLiveKeys(name: string) {
  return api<{ source: string; ttlSeconds: number; extended: number }>(`${sourcePath(name)}/extend`, { method: "POST", body: {} });
}

/** Admins. Sets (or clears, with null) where replays of the source's dead letters are delivered. */
export function setReplayDestination(name: string, replayDestination: string | null) {
  return api<SourceSettings>(sourcePath(name), { method: "PATCH", body: { replayDestination } });
}

/** Admins. Generates or rotates the replay signing secret; this answer is the only time it is shown. */
export function rotateSigningSecret(name: string) {
  return api<{ secret: string; setAt: string; graceUntil: string | null }>(`${sourcePath(name)}/signing-secret`, { method: "POST", body: {} });
}
