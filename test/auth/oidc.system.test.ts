/**
 * Single sign-on through OpenID Connect, end to end: the real server configured against a local stub
 * provider (test/setup/oidc-stub.ts) that checks client credentials, the redirect URI, one-time codes
 * and PKCE, and signs RS256 ID tokens bound to the request's nonce. The browser's part (following
 * redirects, keeping cookies) is played by fetch with a cookie jar.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, uniq } from "@/test/setup/db";
import { updateUser } from "@/lib/auth/users";
import { cliPrincipal } from "@/lib/auth/principal";
import { oidcEnv, startOidcStub, type OidcStub, type StubIdentity } from "@/test/setup/oidc-stub";
import { baseEnv, reservePort, startKeyward, stopServer, type Server } from "@/test/setup/server";

let stub: OidcStub;
let base: string;
const spawned: Server[] = [];

beforeAll(async () => {
  stub = await startOidcStub();
  const port = await reservePort();
  base = `http://127.0.0.1:${port}`;
  await startKeyward(
    Object.assign(baseEnv(), {
      DATABASE_URL: process.env.DATABASE_URL,
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      ...oidcEnv(stub),
      KEYWARD_OIDC_ADMINS: "Boss@Example.test",
    }),
    spawned,
  );
}, 120_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  await stub?.close();
}, 30_000);

/** A cookie jar: name → value, from Set-Cookie headers (expired cookies removed). */
class Jar {
  private cookies = new Map<string, string>();
  take(res: Response) {
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(eq + 1));
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

/** Signs in through the stub as `identity`, following the redirects a browser would; returns the jar. */
async function ssoSignIn(identity: StubIdentity): Promise<{ jar: Jar; landed: string }> {
  stub.setIdentity(identity);
  const jar = new Jar();
  const start = await fetch(`${base}/api/auth/sign-in/social`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: base },
    body: JSON.stringify({ provider: "oidc", callbackURL: "/" }),
  });
  expect(start.status).toBe(200);
  jar.take(start);
  const { url } = (await start.json()) as { url: string };
  expect(url.startsWith(`${stub.issuer}/authorize?`)).toBe(true);
  const authorize = new URL(url);
  expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
  expect(authorize.searchParams.get("nonce")).toBeTruthy();

  const atProvider = await fetch(url, { redirect: "manual" });
  expect(atProvider.status).toBe(302);
  const callback = atProvider.headers.get("location")!;
  expect(callback.startsWith(`${base}/api/auth/callback/oidc?`)).toBe(true);

  const back = await fetch(callback, { redirect: "manual", headers: { cookie: jar.header() } });
  expect(back.status).toBe(302);
  jar.take(back);
  return { jar, landed: back.headers.get("location") ?? "" };
}

async function whoAmI(jar: Jar) {
  const res = await fetch(`${base}/api/v1/session`, { headers: { cookie: jar.header() } });
  return ((await res.json()) as { user: { username: string; role: string } | null }).user;
}

describe("single sign-on through OpenID Connect", () => {
  it("advertises the provider to the sign-in page", async () => {
    const res = await fetch(`${base}/api/v1/session`);
    expect(((await res.json()) as { sso: unknown }).sso).toEqual({ providerId: "oidc", name: "Stub IdP" });
  });

  it("maps the role claim to a role, and the session works on the API", async () => {
    const sub = uniq("sub");
    const { jar, landed } = await ssoSignIn({ sub, email: `${sub}@example.test`, name: "Olive", keyward_roles: ["staff", "operator"] });
    expect(new URL(landed, base).pathname).toBe("/");
    const user = await whoAmI(jar);
    expect(user?.role).toBe("operator");
    const actions = await fetch(`${base}/api/v1/actions?limit=5`, { headers: { cookie: jar.header() } });
    expect(actions.status).toBe(200);
    const users = await fetch(`${base}/api/v1/users`, { headers: { cookie: jar.header() } });
    expect(users.status).toBe(403);
    expect(stub.refusals).toEqual([]);

    const [row] = await sql<{ actor: string; outcome: string; reason: string }>(
      `SELECT actor, detail->>'outcome' AS outcome, detail->>'reason' AS reason FROM audit_events
       WHERE kind = 'operator' AND detail->>'action' = 'sign_in' AND detail->'target'->>'id' = $1`,
      [user!.username],
    );
    expect(row).toMatchObject({ actor: `user:${user!.username}`, outcome: "ok", reason: "single sign-on" });

    // The provider's tokens are not kept as sent (issue 22): no access or refresh token, the ID token encrypted.
    const [account] = await sql<{ access_token: string | null; refresh_token: string | null; id_token: string | null }>(
      "SELECT access_token, refresh_token, id_token FROM auth_accounts WHERE account_id = $1 AND provider_id = 'oidc'",
      [sub],
    );
    expect(account, "the SSO account row").toBeDefined();
    expect(account.access_token).toBeNull();
    expect(account.refresh_token).toBeNull();
    expect(account.id_token).toMatch(/^v1:/);
    expect(account.id_token).not.toContain("eyJ"); // no JWT (base64url of '{"') in clear
  });

  it("maps an allow-listed email to admin (case-insensitively)", async () => {
    const { jar } = await ssoSignIn({ sub: uniq("sub"), email: "boss@example.test" });
    expect((await whoAmI(jar))?.role).toBe("admin");
  });

  it("gives an identity with no role no access at all", async () => {
    const sub = uniq("sub");
    const { jar } = await ssoSignIn({ sub, email: `${sub}@example.test`, keyward_roles: "intern" });
    expect(await whoAmI(jar)).toBeNull();
    const overview = await fetch(`${base}/api/v1/overview`, { headers: { cookie: jar.header() } });
    expect(overview.status).toBe(401);
    const page = await fetch(`${base}/`, { headers: { cookie: jar.header() }, redirect: "manual" });
    expect([302, 303, 307, 308]).toContain(page.status);
    expect(page.headers.get("location")).toContain("/sign-in");
  });

  it("re-reads the role at every sign-in: a role removed upstream is gone at the next one", async () => {
    const sub = uniq("sub");
    const email = `${sub}@example.test`;
    const first = await ssoSignIn({ sub, email, keyward_roles: "admin" });
    expect((await whoAmI(first.jar))?.role).toBe("admin");
    const second = await ssoSignIn({ sub, email, keyward_roles: "viewer" });
    expect((await whoAmI(second.jar))?.role).toBe("viewer");
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM auth_users WHERE email = $1", [email]);
    expect(n).toBe(1);
  });

  it("refuses to set an SSO user's role by hand (the provider decides it), but may disable them", async () => {
    const sub = uniq("sub");
    const { jar } = await ssoSignIn({ sub, email: `${sub}@example.test`, keyward_roles: "viewer" });
    const me = (await whoAmI(jar))!;
    await expect(updateUser(me.username, { role: "admin" }, cliPrincipal())).rejects.toMatchObject({ status: 409, code: "sso_role" });
    await expect(updateUser(me.username, { disabled: true }, cliPrincipal())).resolves.toMatchObject({ disabled: true });
    expect(await whoAmI(jar)).toBeNull();
  });

  it("refuses to start sign-on from another origin", async () => {
    const res = await fetch(`${base}/api/auth/sign-in/social`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://evil.example" },
      body: JSON.stringify({ provider: "oidc", callbackURL: "/" }),
    });
    expect(res.status).toBe(403);
  });

  it("exposes none of Better Auth's other endpoints (no sign-up, no password sign-in by email)", async () => {
    for (const path of ["/api/auth/sign-up/email", "/api/auth/sign-in/email", "/api/auth/get-session", "/api/auth/list-sessions"]) {
      const res = await fetch(`${base}${path}`, {
        method: path.includes("sign") ? "POST" : "GET",
        headers: { "content-type": "application/json", origin: base },
        body: path.includes("sign") ? JSON.stringify({ email: "a@b.c", password: "x".repeat(12), name: "a" }) : undefined,
      });
      expect(res.status, path).toBe(404);
    }
  });
});
