/**
 * Console sessions: the signed-in person behind a request's session cookie, for routes (route.ts) and
 * pages (pages.ts) alike. A disabled account, or an SSO identity that maps to no role, is no one.
 */
import "server-only";
import { getAuth, SESSION_COOKIE_PREFIX } from "./auth";
import type { UserPrincipal } from "./principal";
import { ROLES, roleCapabilities, type Role } from "./roles";

const SESSION_COOKIE = new RegExp(`(?:^|;\\s*)(?:__Secure-)?${SESSION_COOKIE_PREFIX}\\.session_token=`);

export function hasSessionCookie(headers: Headers): boolean {
  return SESSION_COOKIE.test(headers.get("cookie") ?? "");
}

type SessionUser = { id: string; name: string; email: string; username?: string | null; role?: string; disabled?: boolean };

/** The person signed in with this request's cookie, or null (no cookie, expired, signed out, disabled). */
export async function sessionPrincipal(headers: Headers): Promise<UserPrincipal | null> {
  if (!hasSessionCookie(headers)) return null;
  const auth = await getAuth();
  const session = await auth.api.getSession({ headers, query: { disableCookieCache: true } });
  if (!session) return null;
  const user = session.user as SessionUser;
  if (user.disabled || !(ROLES as readonly string[]).includes(user.role ?? "")) return null;
  const role = user.role as Role;
  return {
    kind: "user",
    id: user.id,
    username: user.username ?? user.email,
    name: user.name,
    role,
    capabilities: roleCapabilities(role),
  };
}
