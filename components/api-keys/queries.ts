/** Client side of API keys (app/api/v1/api-keys): query keys, the list query, create and revoke. */
import { queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError, type AsJson } from "@/components/api";
import type { ApiKeyInfo } from "@/lib/auth/api-keys";
import type { Scope } from "@/lib/auth/schema";

/** A key as GET /api/v1/api-keys sends it; never the key itself. */
export type ApiKeyItem = AsJson<ApiKeyInfo>;

export const apiKeyKeys = {
  all: ["api-keys"] as const,
  list: () => [...apiKeyKeys.all, "list"] as const,
};

export function apiKeysQuery() {
  return queryOptions({
    queryKey: apiKeyKeys.list(),
    queryFn: async ({ signal }) => (await api<{ apiKeys: ApiKeyItem[] }>("/api/v1/api-keys", { signal })).apiKeys,
    retry: retryUnlessClientError,
  });
}

/** The answer carries `key`: the only time it exists in clear. */
export function createApiKey(body: { name: string; scopes: Scope[] }) {
  return api<ApiKeyItem & { key: string }>("/api/v1/api-keys", { method: "POST", body });
}

/** Revokes by id; the key is refused from the next request on. */
export function revokeApiKey(id: string) {
  return api<ApiKeyItem>(`/api/v1/api-keys/${encodeURIComponent(id)}`, { method: "DELETE" });
}
