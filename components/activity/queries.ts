/** Client side of the operator action log (GET /api/v1/actions): keys and the paged query. */
import { infiniteQueryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError } from "@/components/api";
import type { ActionPage, ActionRecord } from "@/lib/audit/schema";

export type { ActionRecord };
export type { ActionPage };
/** Exact matches, as the server filters: actor like `user:alice`, action like `user.create`. */
export type ActionFilters = { actor?: string; action?: string };

export const PAGE_SIZE = 50;

export const activityKeys = {
  all: ["activity"] as const,
  list: (filters: ActionFilters) => [...activityKeys.all, "list", filters] as const,
};

export function actionsQuery(filters: ActionFilters) {
  return infiniteQueryOptions({
    queryKey: activityKeys.list(filters),
    queryFn: ({ pageParam, signal }) => {
      const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (pageParam) params.set("cursor", pageParam);
      if (filters.actor) params.set("actor", filters.actor);
      if (filters.action) params.set("action", filters.action);
      return api<ActionPage>(`/api/v1/actions?${params}`, { signal });
    },
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next,
    retry: retryUnlessClientError,
  });
}

/** Actions Keyward records today, offered as suggestions in the filter (any text is accepted). */
export const KNOWN_ACTIONS = [
  "sign_in",
  "sign_out",
  "user.create",
  "user.update",
  "user.disable",
  "user.enable",
  "user.reset_password",
  "api_key.create",
  "api_key.revoke",
  "source.create",
];
