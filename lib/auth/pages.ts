/**
 * Page-side authorization, by the same rule as routes (authorize.ts): server components ask who is
 * signed in and whether they may see a page. The console layout sends anyone not signed in to /sign-in.
 */
import "server-only";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { isUnavailable } from "../db/sql";
import { KeywardError } from "../errors";
import { isAllowed } from "./authorize";
import type { UserPrincipal } from "./principal";
import type { Capability } from "./roles";
import { sessionPrincipal } from "./session";

/** The signed-in user or null; with the database unreachable, a redirect to the "database unreachable" page. */
export async function currentUser(): Promise<UserPrincipal | null> {
  try {
    return await sessionPrincipal(new Headers(await headers()));
  } catch (err) {
    redirectIfUnavailable(err);
    throw err;
  }
}

/** A page's database read failed: if the database is unreachable, show that state instead of an error page. */
export function redirectIfUnavailable(err: unknown): void {
  if (isUnavailable(err) || (err instanceof KeywardError && err.status === 503)) redirect("/unavailable");
}

/** The signed-in user, or a redirect to the sign-in page. */
export async function requireUser(): Promise<UserPrincipal> {
  const user = await currentUser();
  if (!user) redirect("/sign-in");
  return user;
}

/** For a page that needs a capability: the user, and whether they may see it (render a refusal if not). */
export async function requirePage(allow: readonly Capability[]): Promise<{ user: UserPrincipal; allowed: boolean }> {
  const user = await requireUser();
  return { user, allowed: isAllowed(user, allow) };
}
