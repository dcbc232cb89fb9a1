/**
 * The console session. GET: who is signed in (null if no one), whether an admin exists yet, and the
 * SSO provider if configured — public, since the sign-in page needs it. POST: sign in with
 * { username, password } — public, throttled, same-origin only. DELETE: sign out.
 */
import { KeywardError } from "@/lib/errors";
import { sessionInfo, sessionInfoSchema, signIn, signInRequest, signOut } from "@/lib/auth/sign-in";
import { z } from "zod";
import { sessionPrincipal } from "@/lib/auth/session";
import { assertSameOrigin, clientAddress, json, route } from "@/lib/http/route";

export const GET = route(async ({ principal }) => json(await sessionInfo(principal)), {
  public: "the sign-in page asks who is signed in and whether an admin exists",
  summary: "Who is signed in (null if no one), whether an admin exists, the SSO provider",
  responses: { 200: { description: "{ user, adminExists, sso }", schema: sessionInfoSchema } },
});

export const POST = route(
  async ({ req, body }) => {
    const { headers } = await signIn(body, req, clientAddress(req));
    const principal = await sessionPrincipal(withCookies(req.headers, headers));
    if (!principal) throw KeywardError.unauthorized("invalid username or password");
    const res = json(await sessionInfo(principal));
    for (const c of headers.getSetCookie()) res.headers.append("set-cookie", c);
    return res;
  },
  {
    public: "signing in is how a person gets a session",
    // A login form posted from another site (login CSRF) is refused like any cross-origin change.
    guard: assertSameOrigin,
    body: signInRequest,
    maxBodyBytes: 4096,
    summary: "Sign in with username and password (sets the session cookie)",
    responses: { 200: { description: "The new session's { user, adminExists, sso }", schema: sessionInfoSchema } },
    errors: [403, 429],
  },
);

export const DELETE = route(
  async ({ req, principal }) => {
    const headers = await signOut(req, principal);
    const res = json({ signedOut: true });
    for (const c of headers.getSetCookie()) res.headers.append("set-cookie", c);
    return res;
  },
  { allow: ["read"], summary: "Sign out", responses: { 200: { description: "{ signedOut: true }", schema: z.object({ signedOut: z.literal(true) }) } } },
);

/** The request headers as they will be once the browser stores the new session cookie. */
function withCookies(reqHeaders: Headers, setCookies: Headers): Headers {
  const cookies = setCookies.getSetCookie().map((c) => c.split(";")[0]);
  const h = new Headers(reqHeaders);
  h.set("cookie", cookies.join("; "));
  return h;
}
