/** Client side of sources (app/api/v1/sources, app/api/v1/source-names, app/api/v1/presets): query keys, the queries, and the changes. */
import { queryOptions } from "@tanstack/react-query";
import type { z } from "zod";
import { api, apiParsed, retryUnlessClientError } from "@/components/api";
import type { Preset } from "@/lib/retention/presets";
import type { ExtendedKeys, RotatedSecret, SourceList, sourceInfoSchema, sourcePreviewSchema, sourceReportSchema } from "@/lib/sources/schema";
import { sourceNamesSchema } from "@/lib/sources/schema";
import type { CreateSourceBody, UpdateSourceBody } from "./source-form";

/** A source's settings as create and update answer them. */
export type SourceSettings = z.infer<typeof sourceInfoSchema>;

/** A source as GET /api/v1/sources sends it: its settings, invariant checks and projected size. */
export type SourceItem = z.infer<typeof sourceReportSchema>;

/** POST /api/v1/sources/{name}/preview: the source as it is and as the change would leave it. */
export type SourcePreview = z.infer<typeof sourcePreviewSchema>;

/** A preset as GET /api/v1/presets sends it (lib/retention/presets.ts, with its TTL). */
export type PresetItem = Preset & { ttlSeconds: number };

export const sourceKeys = {
  all: ["sources"] as const,
  list: () => [...sourceKeys.all, "list"] as const,
  names: () => [...sourceKeys.all, "names"] as const,
  presets: () => [...sourceKeys.all, "presets"] as const,
};

export function sourcesQuery() {
  return queryOptions({
    queryKey: sourceKeys.list(),
    queryFn: async ({ signal }) => (await api<SourceList>("/api/v1/sources", { signal })).sources,
    retry: retryUnlessClientError,
  });
}

/** Every source's name, by name (GET /api/v1/source-names): for pickers; re-read once a minute while on screen. */
export function sourceNamesQuery() {
  return queryOptions({
    queryKey: sourceKeys.names(),
    queryFn: ({ signal }) => apiParsed("/api/v1/source-names", sourceNamesSchema, "the server's source names do not match this console version", signal),
    staleTime: 60_000,
    refetchInterval: 60_000,
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
  return api<ExtendedKeys>(`${sourcePath(name)}/extend`, { method: "POST", body: {} });
}

/** Admins. Sets (or clears, with null) where replays of the source's dead letters are delivered. */
export function setReplayDestination(name: string, replayDestination: string | null) {
  return api<SourceSettings>(sourcePath(name), { method: "PATCH", body: { replayDestination } });
}

/** Admins. Generates or rotates the replay signing secret; this answer is the only time it is shown. */
export function rotateSigningSecret(name: string) {
  return api<RotatedSecret>(`${sourcePath(name)}/signing-secret`, { method: "POST", body: {} });
}
