/**
 * Better Auth's OpenID Connect endpoints, and only those: starting single sign-on
 * (POST /api/auth/sign-in/oauth2) and the provider's redirect back (GET /api/auth/oauth2/callback/oidc).
 * Everything else under /api/auth is 404: Keyward's own routes call Better Auth server-side, and
 * sign-up does not exist. 404 as well when SSO is not configured.
 */
import { KeywardError } from "@/lib/errors";
import { getAuth } from "@/lib/auth/auth";
import { OIDC_PROVIDER_ID, oidcConfig } from "@/lib/auth/oidc";
import { sessionPrincipal } from "@/lib/auth/session";
import { recordAction } from "@/lib/audit/actions";
import { loadEnv } from "@/lib/config/env";
import { assertSameOrigin, clientAddress, route } from "@/lib/http/route";

const START = "/api/auth/sign-in/oauth2";
const CALLBACK = `/api/auth/oauth2/callback/${OIDC_PROVIDER_ID}`;

function notFound(): never {
  throw KeywardError.notFound("not_found", "no such endpoint");
}

export const POST = route(
  async ({ req }) => {
    if (!oidcConfig(loadEnv()) || new URL(req.url).pathname !== START) notFound();
    assertSameOrigin(req);
    return (await getAuth()).handler(req);
  },
  { public: "starting single sign-on happens before there is a session" },
);

export const GET = route(
  async ({ req }) => {
    if (!oidcConfig(loadEnv()) || new URL(req.url).pathname !== CALLBACK) notFound();
    const res = await (await getAuth()).handler(req);
    const cookies = res.headers.getSetCookie().map((c) => c.split(";")[0]);
    const principal = cookies.length ? await sessionPrincipal(new Headers({ cookie: cookies.join("; ") })) : null;
    await recordAction(principal ?? "anonymous", {
      action: "sign_in",
      outcome: principal ? "ok" : "failed",
      reason: principal ? "single sign-on" : "single sign-on gave no usable identity or role",
      address: clientAddress(req),
      ...(principal ? { target: { type: "user", id: principal.username } } : {}),
    });
    return res;
  },
  { public: "the identity provider redirects the browser back here before there is a session" },
);
