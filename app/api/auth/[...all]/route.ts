/**
 * Better Auth's OpenID Connect endpoints, and only those: starting single sign-on
 * (POST /api/auth/sign-in/social with { provider: "oidc", callbackURL }) and the provider's redirect back
 * (GET /api/auth/callback/oidc).
 * Everything else under /api/auth is 404: Keyward's own routes call Better Auth server-side, and
 * sign-up does not exist. 404 as well when SSO is not configured.
 */
import { KeywardError } from "@/lib/errors";
import { authSecret, getAuth } from "@/lib/auth/auth";
import { applyOidcRole, OIDC_PROVIDER_ID, oidcConfig } from "@/lib/auth/oidc";
import { sessionPrincipal } from "@/lib/auth/session";
import { recordAction } from "@/lib/audit/actions";
import { loadEnv } from "@/lib/config/env";
import { ssoStartSchema } from "@/lib/auth/schema";
import { assertSameOrigin, clientAddress, route } from "@/lib/http/route";

const START = "/api/auth/sign-in/social";
const CALLBACK = `/api/auth/callback/${OIDC_PROVIDER_ID}`;

function notFound(): never {
  throw KeywardError.notFound("not_found", "no such endpoint");
}

export const POST = route(
  async ({ req }) => {
    if (!oidcConfig(loadEnv()) || new URL(req.url).pathname !== START) notFound();
    assertSameOrigin(req);
    return (await getAuth()).handler(req);
  },
  {
    public: "starting single sign-on happens before there is a session",
    summary: "Start single sign-on (POST /api/auth/sign-in/social with { provider: \"oidc\", callbackURL })",
    responses: { 200: { description: "Better Auth's answer: the identity provider's authorization URL ({ url, redirect })", schema: ssoStartSchema } },
    errors: [403, 404],
  },
);

export const GET = route(
  async ({ req }) => {
    const config = oidcConfig(loadEnv());
    if (!config || new URL(req.url).pathname !== CALLBACK) notFound();
    const auth = await getAuth();
    const res = await auth.handler(req);
    const cookies = res.headers.getSetCookie().map((c) => c.split(";")[0]);
    const headers = new Headers({ cookie: cookies.join("; ") });
    // The role is set from this sign-in's ID token before the browser receives its session cookie.
    const session = cookies.length ? await auth.api.getSession({ headers, query: { disableCookieCache: true } }) : null;
    const role = session ? await applyOidcRole(config, session.user.id, await authSecret()) : null;
    const principal = session ? await sessionPrincipal(headers) : null;
    await recordAction(principal ?? "anonymous", {
      action: "sign_in",
      outcome: principal ? "ok" : "refused",
      reason: principal
        ? "single sign-on"
        : session && (session.user as { disabled?: boolean }).disabled
          ? "single sign-on: account disabled"
          : session
          ? `single sign-on: ${session.user.email} maps to no role`
          : "single sign-on failed at the provider or callback",
      address: clientAddress(req),
      target: { type: "user", id: principal?.username ?? session?.user.email ?? "unknown" },
      ...(session ? { after: { role } } : {}),
    });
    return res;
  },
  {
    public: "the identity provider redirects the browser back here before there is a session",
    summary: "The identity provider's redirect back (GET /api/auth/callback/oidc)",
    responses: { 302: { description: "To the console with the session cookie set, or to the sign-in page with the error", contentType: null } },
    errors: [404],
  },
);
