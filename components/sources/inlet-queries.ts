/** Client side of inlets (app/api/v1/sources/{name}/inlets, app/api/v1/inlets/{id}): query keys, the query, the changes. */
import { queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError } from "@/components/api";
import type { CreateInletRequest, Inlet, InletList, RemovedInlet } from "@/lib/inlets/schema";

export type { Inlet };

export const inletKeys = {
  all: ["inlets"] as const,
  ofSource: (source: string) => [...inletKeys.all, source] as const,
};

const inletsPath = (source: string) => `/api/v1/sources/${encodeURIComponent(source)}/inlets`;

/** Admins. The source's inlets, URLs with the password masked; refreshed while shown (state and lag move). */
export function inletsQuery(source: string) {
  return queryOptions({
    queryKey: inletKeys.ofSource(source),
    queryFn: async ({ signal }) => (await api<InletList>(inletsPath(source), { signal })).inlets,
    retry: retryUnlessClientError,
    refetchInterval: 10_000,
  });
}

/** Admins. 422 inlet_unreachable (with the broker's reason) when the queue cannot be consumed; 409 inlet_exists. */
export function addInlet(source: string, body: CreateInletRequest) {
  return api<Inlet>(inletsPath(source), { method: "POST", body });
}

/** Admins. The inlet's dead letters stay. */
export function removeInlet(id: string) {
  return api<RemovedInlet>(`/api/v1/inlets/${encodeURIComponent(id)}`, { method: "DELETE" });
}
