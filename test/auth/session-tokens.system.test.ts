/**
 * Session tokens are stored hashed (lib/auth/session-tokens.ts), through the real server: the session
 * row never holds the cookie's token, a cookie rebuilt from what the database holds (the session row
 * and the signing secret in `settings`) is refused, while real sign-in, the session's sliding refresh,
 * sign-out and disabling a user work as before.
 */
import { createHash, createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashSessionToken } from "@/lib/auth/session-tokens";
import { cliPrincipal } from "@/lib/auth/principal";
import { updateUser } from "@/lib/auth/users";
import { sql } from "@/test/setup/db";
import { stopServer, type Server } from "@/test/setup/server";
import { call, signedInUser, startTestServer } from "@/test/setup/auth";

const spawned: Server[] = [];
let baseUrl: string;

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned));
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

const COOKIE = "keyward.session_token";

/** The token inside a `keyward.session_token=<token>.<signature>` cookie. */
function tokenOf(cookie: string): string {
  const value = decodeURIComponent(cookie.split("; ").find((c) => c.startsWith(`${COOKIE}=`))!.slice(COOKIE.length + 1));
  return value.slice(0, value.lastIndexOf("."));
}

/** A session cookie as Better Auth signs one: `<token>.<base64 HMAC-SHA256(secret, token)>`, URI-encoded. */
function forgeCookie(token: string, secret: string): string {
  const signature = createHmac("sha256", secret).update(token).digest("base64");
  return `${COOKIE}=${encodeURIComponent(`${token}.${signature}`)}`;
}

async function sessionRows(username: string) {
  return sql<{ token: string; row: string; expires_at: Date }>(
    `SELECT s.token, row_to_json(s)::text AS row, s.expires_at FROM auth_sessions s JOIN auth_users u ON u.id = s.user_id WHERE u.username = $1`,
    [username],
  );
}

async function authSecret(): Promise<string> {
  if (process.env.KEYWARD_AUTH_SECRET) return process.env.KEYWARD_AUTH_SECRET;
  const [row] = await sql<{ value: string }>("SELECT value FROM settings WHERE key = 'auth_secret'");
  return row.value;
}

const whoIs = async (cookie: string) => (await call(baseUrl, "GET", "/api/v1/session", { cookie })).body.user?.username ?? null;

describe("session tokens at rest", () => {
  it("the session row holds SHA-256 of the cookie's token, never the token", async () => {
    const admin = await signedInUser(baseUrl, "admin");
    const token = tokenOf(admin.cookie);
    expect(token.length).toBeGreaterThanOrEqual(32);
    const rows = await sessionRows(admin.username);
    expect(rows).toHaveLength(1);
    expect(rows[0].token).toBe(createHash("sha256").update(token).digest("hex"));
    expect(rows[0].token).toBe(hashSessionToken(token));
    expect(rows[0].row).not.toContain(token);
    // Nowhere else in the database either.
    const [{ n }] = await sql<{ n: number }>(
      `SELECT (SELECT count(*) FROM auth_verifications v WHERE strpos(row_to_json(v)::text, $1) > 0)
            + (SELECT count(*) FROM audit_events a WHERE strpos(coalesce(a.detail::text, ''), $1) > 0)
            + (SELECT count(*) FROM settings s WHERE strpos(s.value, $1) > 0) AS n`,
      [token],
    );
    expect(Number(n)).toBe(0);
  });

  it("a cookie rebuilt from the database and the signing secret is refused; the real one works", async () => {
    const admin = await signedInUser(baseUrl, "admin");
    const secret = await authSecret();
    // The forging method is right: applied to the real token it yields the very cookie the server set.
    expect(forgeCookie(tokenOf(admin.cookie), secret)).toBe(admin.cookie.split("; ").find((c) => c.startsWith(`${COOKIE}=`)));
    expect(await whoIs(admin.cookie)).toBe(admin.username);

    const [stored] = await sessionRows(admin.username);
    const forged = forgeCookie(stored.token, secret);
    expect(await whoIs(forged)).toBeNull();
    const res = await call(baseUrl, "GET", "/api/v1/users", { cookie: forged });
    expect(res.status).toBe(401);
    // The refused forgery ended nothing: the real session still works.
    expect((await call(baseUrl, "GET", "/api/v1/users", { cookie: admin.cookie })).status).toBe(200);
  });

  it("a session due for its sliding refresh is found by the hashed token and extended", async () => {
    const user = await signedInUser(baseUrl, "viewer");
    // Make the session look 2 hours old (it is extended when older than an hour).
    await sql(
      `UPDATE auth_sessions SET expires_at = now() + interval '10 hours' WHERE user_id = (SELECT id FROM auth_users WHERE username = $1)`,
      [user.username],
    );
    expect(await whoIs(user.cookie)).toBe(user.username);
    const [row] = await sessionRows(user.username);
    expect(row.expires_at.getTime()).toBeGreaterThan(Date.now() + 11.5 * 3600_000);
    expect(row.token).toBe(hashSessionToken(tokenOf(user.cookie)));
    expect(await whoIs(user.cookie)).toBe(user.username);
  });

  it("sign-out deletes the session row; the old cookie is no one", async () => {
    const user = await signedInUser(baseUrl, "viewer");
    expect(await sessionRows(user.username)).toHaveLength(1);
    const out = await call(baseUrl, "DELETE", "/api/v1/session", { cookie: user.cookie, origin: baseUrl });
    expect(out.status).toBe(200);
    expect(await sessionRows(user.username)).toHaveLength(0);
    expect(await whoIs(user.cookie)).toBeNull();
  });

  it("disabling a user deletes their sessions; the cookie stops working at once", async () => {
    const user = await signedInUser(baseUrl, "operator");
    expect(await whoIs(user.cookie)).toBe(user.username);
    await updateUser(user.username, { disabled: true }, cliPrincipal());
    expect(await sessionRows(user.username)).toHaveLength(0);
    expect((await call(baseUrl, "GET", "/api/v1/overview", { cookie: user.cookie })).status).toBe(401);
  });

  it("the migration's SQL hash and the server's hash agree (sessions issued before it stay valid)", async () => {
    const token = "AbCdEfGhIjKlMnOpQrStUvWxYz012345";
    const [{ h }] = await sql<{ h: string }>("SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex') AS h", [token]);
    expect(h).toBe(hashSessionToken(token));
  });
});
