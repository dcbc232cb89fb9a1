/**
 * A minimal OpenID Connect provider for tests: discovery, an authorization endpoint that signs in a
 * preset identity at once (no login form), a token endpoint issuing RS256 ID tokens bound to the
 * request's nonce, the JWKS, and userinfo. It checks what a real provider checks: client credentials,
 * the redirect URI, the one-time code, and PKCE (S256).
 */
import http from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

export type StubIdentity = { sub: string; email: string; name?: string; [claim: string]: unknown };

export type OidcStub = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Who the next authorization signs in as. */
  setIdentity(identity: StubIdentity): void;
  /** Token requests the stub refused, with why. */
  refusals: string[];
  close(): Promise<void>;
};

export async function startOidcStub(): Promise<OidcStub> {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "stub-1", alg: "RS256", use: "sig" };
  const clientId = "keyward-test";
  const clientSecret = randomBytes(16).toString("hex");
  let identity: StubIdentity = { sub: "nobody", email: "nobody@example.test" };
  const codes = new Map<string, { identity: StubIdentity; nonce?: string; challenge?: string; redirectUri: string }>();
  const refusals: string[] = [];
  let issuer = "";

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", issuer);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === "/.well-known/openid-configuration") {
      return send(200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        userinfo_endpoint: `${issuer}/userinfo`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_post", "client_secret_basic"],
        scopes_supported: ["openid", "email", "profile"],
      });
    }
    if (url.pathname === "/jwks") return send(200, { keys: [jwk] });
    if (url.pathname === "/authorize") {
      const p = url.searchParams;
      if (p.get("client_id") !== clientId || p.get("response_type") !== "code") return send(400, { error: "invalid_request" });
      const code = randomBytes(12).toString("hex");
      codes.set(code, {
        identity,
        nonce: p.get("nonce") ?? undefined,
        challenge: p.get("code_challenge") ?? undefined,
        redirectUri: p.get("redirect_uri") ?? "",
      });
      const back = new URL(p.get("redirect_uri") ?? "");
      back.searchParams.set("code", code);
      back.searchParams.set("state", p.get("state") ?? "");
      back.searchParams.set("iss", issuer);
      res.writeHead(302, { location: back.toString() });
      return res.end();
    }
    if (url.pathname === "/token" && req.method === "POST") {
      let body = "";
      for await (const chunk of req) body += chunk;
      const form = new URLSearchParams(body);
      let id = form.get("client_id");
      let secret = form.get("client_secret");
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "");
      if (basic) [id, secret] = Buffer.from(basic[1], "base64").toString().split(":").map(decodeURIComponent);
      const grant = codes.get(form.get("code") ?? "");
      codes.delete(form.get("code") ?? "");
      const refuse = (why: string) => {
        refusals.push(why);
        return send(400, { error: "invalid_grant", error_description: why });
      };
      if (id !== clientId || secret !== clientSecret) return refuse("bad client credentials");
      if (!grant) return refuse("unknown or reused code");
      if (form.get("redirect_uri") !== grant.redirectUri) return refuse("redirect_uri mismatch");
      if (grant.challenge) {
        const verifier = form.get("code_verifier") ?? "";
        if (createHash("sha256").update(verifier).digest("base64url") !== grant.challenge) return refuse("PKCE mismatch");
      }
      const { sub, ...claims } = grant.identity;
      const idToken = await new SignJWT({ ...claims, email_verified: true, ...(grant.nonce ? { nonce: grant.nonce } : {}) })
        .setProtectedHeader({ alg: "RS256", kid: jwk.kid })
        .setIssuer(issuer)
        .setAudience(clientId)
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(privateKey);
      const accessToken = `at_${randomBytes(8).toString("hex")}`;
      tokens.set(accessToken, grant.identity);
      return send(200, { access_token: accessToken, token_type: "Bearer", expires_in: 300, id_token: idToken, scope: "openid email profile" });
    }
    if (url.pathname === "/userinfo") {
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
      const who = tokens.get(token);
      if (!who) return send(401, { error: "invalid_token" });
      return send(200, { ...who, email_verified: true });
    }
    send(404, { error: "not_found" });
  });
  const tokens = new Map<string, StubIdentity>();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as import("node:net").AddressInfo).port}`;
  return {
    issuer,
    clientId,
    clientSecret,
    refusals,
    setIdentity: (i) => (identity = i),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The environment that points a Keyward server at this stub, with roles read from `keyward_roles`. */
export function oidcEnv(stub: OidcStub): Record<string, string> {
  return {
    KEYWARD_OIDC_ISSUER: stub.issuer,
    KEYWARD_OIDC_CLIENT_ID: stub.clientId,
    KEYWARD_OIDC_CLIENT_SECRET: stub.clientSecret,
    KEYWARD_OIDC_NAME: "Stub IdP",
    KEYWARD_OIDC_ROLE_CLAIM: "keyward_roles",
  };
}
