/**
 * Page-side authorization, by the same rule as routes (authorize.ts): server components ask who is
 * signed in and whether they may see a page. The console layout sends anyone not signed in to /sign-in,
 * which returns them to the page they opened once they have signed in (return-to.ts).
 */
import "server-only";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { isUnavailable } from "@/lib/db/sql";
import { KeywardError } from "@/lib/errors";
import { isAllowed } from "./authorize";
import { PAGE_PATH_HEADER, signInPath, unavailablePath } from "./return-to";
import type { UserPrincipal } from "./principal";
import type { Capability } from "./roles";
import { sessionPrincipal } from "./session";

/** The signed-in user or null; with the database unreachable, a redirect to the "database unreachable" page. */
export async function currentUser(): Promise<UserPrincipal | null> {
  const request = await headers();
  try {
    return await sessionPrincipal(new Headers(request));
  } catch (err) {
    redirectIfUnavailable(err, request.get(PAGE_PATH_HEADER) ?? "/");
    throw err;
  }
}

/**
 * A page's database read failed: if the database is unreachable, show that state instead of an error page;
 * it comes back to `page` once the database answers.
 */
export function redirectIfUnavailable(err: unknown, page = "/"): void {
  if (isUnavailable(err) || (err instanceof KeywardError && err.status === 503)) redirect(unavailablePath(page));
}

/** The signed-in user, or a redirect to the sign-in page that returns to this page. */
export async function requireUser(): Promise<UserPrincipal> {
  const user = await currentUser();
  if (!user) redirect(signInPath((await headers()).get(PAGE_PATH_HEADER) ?? "/"));
  return user;
}

/** For a page that needs a capability: the user, and whether they may see it (render a refusal if not). */
export async function requirePage(allow: readonly Capability[]): Promise<{ user: UserPrincipal; allowed: boolean }> {
  const user = await requireUser();
  return { user, allowed: isAllowed(user, allow) };
}
