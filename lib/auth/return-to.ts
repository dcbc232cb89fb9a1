/**
 * Where signing in returns to: the console page someone opened before they were sent to sign in (an alert's
 * link to a replay, an event page shared in an incident channel, a page whose session ended). The path
 * travels as `/sign-in?next=<path>`; only a page of this console is accepted. Anything else (another origin,
 * a scheme, `//host`, a backslash or a tab folding into `//host`, the sign-in page itself, an API path)
 * returns to the Overview. The "database unreachable" page returns the same way once the database answers.
 * Shared by the server (the console layout's redirect, the sign-in page) and the browser (a session that
 * ended while a page was open, the "database unreachable" page), so it imports nothing.
 */

/** The sign-in page's query parameter that names the page to return to. */
export const RETURN_TO_PARAM = "next";

/**
 * The request header through which `keyward start` hands a console page its own path and query
 * (lib/server/start.ts sets it on every page request, replacing whatever the client sent): a server
 * component cannot read its URL otherwise.
 */
export const PAGE_PATH_HEADER = "x-keyward-page";

const MAX_LENGTH = 2048;
const BASE = "http://keyward.invalid";
/** Pages that are never a place to return to. */
const NOT_A_DESTINATION = /^\/(sign-in|unavailable|api|_next)(\/|$)/;
/** Encoded path separators: harmless in a page's path (an event id with a slash), refused by better-auth. */
const ENCODED_SEPARATOR = /%2f|%5c/i;
// eslint-disable-next-line no-control-regex -- control characters are exactly what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** `raw` if it is a page of this console (normalized: `/a/../b` is `/b`), else "/" (the Overview). */
export function safeReturnTo(raw: unknown): string {
  if (typeof raw !== "string" || raw.length > MAX_LENGTH || !raw.startsWith("/") || raw.startsWith("//")) return "/";
  if (raw.includes("\\") || CONTROL.test(raw)) return "/";
  let url: URL;
  try {
    url = new URL(raw, BASE);
  } catch {
    return "/";
  }
  if (url.origin !== BASE || NOT_A_DESTINATION.test(url.pathname)) return "/";
  // A client-side navigation's marker is not part of the page's address (deleting re-encodes the query: only then).
  if (url.searchParams.has("_rsc")) url.searchParams.delete("_rsc");
  return url.pathname + url.search + url.hash;
}

/** `stop` (the sign-in page, the "database unreachable" page) returning to `page` when it is done (plain for the Overview). */
function via(stop: "/sign-in" | "/unavailable", page: string): string {
  const to = safeReturnTo(page);
  return to === "/" ? stop : `${stop}?${RETURN_TO_PARAM}=${encodeURIComponent(to)}`;
}

/** The sign-in page that returns to `page` once signed in. */
export const signInPath = (page: string) => via("/sign-in", page);

/** The "database unreachable" page that returns to `page` once the database answers again. */
export const unavailablePath = (page: string) => via("/unavailable", page);

/**
 * The `callbackURL` single sign-on returns to: the page, unless its path holds an encoded separator, which
 * better-auth's callback check refuses (with a 403 that would stop the sign-in): then the Overview.
 */
export function ssoReturnTo(page: string): string {
  const to = safeReturnTo(page);
  const path = to.split(/[?#]/, 1)[0];
  return ENCODED_SEPARATOR.test(path) ? "/" : to;
}
