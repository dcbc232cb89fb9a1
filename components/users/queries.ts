/** Client side of console users (app/api/v1/users): query keys, the list query, and the changes. */
import { queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError, type AsJson } from "@/components/api";
import type { Role } from "@/lib/auth/roles";
import type { UserInfo } from "@/lib/auth/users";

/** A user as GET /api/v1/users sends it. Role "none": an SSO identity whose groups map to no role. */
export type ConsoleUser = AsJson<UserInfo>;

export const userKeys = {
  all: ["users"] as const,
  list: () => [...userKeys.all, "list"] as const,
};

export function usersQuery() {
  return queryOptions({
    queryKey: userKeys.list(),
    queryFn: async ({ signal }) => (await api<{ users: ConsoleUser[] }>("/api/v1/users", { signal })).users,
    retry: retryUnlessClientError,
  });
}

const userPath = (username: string) => `/api/v1/users/${encodeURIComponent(username)}`;

/** `password` is in the answer only when the server generated it: the one time it can be shown. */
export function createUser(body: { username: string; role: Role; password?: string }) {
  return api<{ user: ConsoleUser; password?: string }>("/api/v1/users", { method: "POST", body });
}

/** Role and/or disabled; the user's sessions end. 409 last_admin when no active admin would remain. */
export function updateUser(username: string, body: { role?: Role; disabled?: boolean }) {
  return api<{ user: ConsoleUser }>(userPath(username), { method: "PATCH", body });
}

/** A new generated password for a local account (returned once); the user's sessions end. */
export function resetPassword(username: string) {
  return api<{ reset: true; password?: string }>(`${userPath(username)}/password`, { method: "POST", body: {} });
}
