/**
 * Signing in and out against the real server: the session cookie's attributes, one message for every
 * failed sign-in, lock-out per user (5 failures) and per address (20), a success clearing the user's
 * count, sign-out and disabling ending sessions at once, and the operator action log recording every
 * attempt without the password.
 *
 * The server trusts X-Forwarded-For (KEYWARD_TRUST_PROXY=true), so each test signs in from its own
 * address and its failures lock out no one else.
 */
import { randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updateUser } from "@/lib/auth/users";
import { cliPrincipal } from "@/lib/auth/principal";
import { sql, uniq } from "@/test/setup/db";
import { stopServer, type Server } from "@/test/setup/server";
import { call, makeUser, signIn, startTestServer, type SignedIn, type TestUser } from "@/test/setup/auth";

const spawned: Server[] = [];
let baseUrl: string;
/** Every password this file typed, right or wrong: none may end up in audit_events. */
const typed: string[] = [];

/** A documentation-range address (RFC 5737 TEST-NET-2) of this test's own. */
const newAddress = () => `198.51.${randomInt(256)}.${randomInt(1, 255)}`;

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned, { KEYWARD_TRUST_PROXY: "true" }));
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

function attempt(user: { username: string }, password: string, address: string): Promise<SignedIn> {
  typed.push(password);
  return signIn(baseUrl, user.username, password, address);
}

const INVALID = { error: { code: "unauthorized", message: "invalid username or password" } };

function expectLockedOut(res: SignedIn, scope: RegExp) {
  expect(res.status).toBe(429);
  expect(res.body.error.code).toBe("locked_out");
  expect(res.body.error.message).toMatch(scope);
  const retryAfter = Number(res.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(15 * 60);
  expect(res.cookie).toBe("");
}

type Attempt = { actor: string; detail: { action: string; outcome: string; address: string; target: { id: string }; reason?: string } };

const signInRows = (address: string) =>
  sql<Attempt>(
    "SELECT actor, detail FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'sign_in' AND detail->>'address' = $1 ORDER BY at, id",
    [address],
  );

describe("signing in", () => {
  it("success: 200 with the user, and an HttpOnly, SameSite=Lax session cookie (not Secure on http)", async () => {
    const user = await makeUser("operator");
    const res = await attempt({ username: user.username.toUpperCase() }, user.password, newAddress());
    expect(res.status).toBe(200);
    expect(res.body.user).toMatchObject({ username: user.username, role: "operator" });
    const session = res.setCookie.find((c) => c.startsWith("keyward.session_token="));
    expect(session).toBeDefined();
    for (const c of res.setCookie) {
      expect(c).toMatch(/;\s*HttpOnly/i);
      expect(c).toMatch(/;\s*SameSite=Lax/i);
      expect(c).not.toMatch(/;\s*Secure/i);
    }
    expect(session).toMatch(/;\s*Path=\//i);
    // The cookie is a working session.
    const who = await call(baseUrl, "GET", "/api/v1/session", { cookie: res.cookie });
    expect(who.body.user.username).toBe(user.username);
    expect((await call(baseUrl, "GET", "/api/v1/overview", { cookie: res.cookie })).status).toBe(200);
  });

  it("wrong password, unknown user and disabled user all get 401 'invalid username or password', and no cookie", async () => {
    const address = newAddress();
    const user = await makeUser("viewer");
    const disabled = await makeUser("viewer");
    await updateUser(disabled.username, { disabled: true }, cliPrincipal());
    const results = [
      await attempt(user, `${user.password}-wrong`, address),
      await attempt({ username: uniq("nobody") }, user.password, address),
      await attempt(disabled, disabled.password, address),
    ];
    for (const res of results) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual(INVALID);
      expect(res.setCookie).toEqual([]);
    }
  });

  it("5 failures lock the user out: 429 with Retry-After, even for the right password, from any address", async () => {
    const user = await makeUser("viewer");
    const address = newAddress();
    for (let i = 1; i <= 5; i++) {
      const res = await attempt(user, `wrong-password-${i}`, address);
      expect(res.status, `failure ${i}`).toBe(401);
    }
    expectLockedOut(await attempt(user, user.password, address), /for this user/);
    expectLockedOut(await attempt(user, user.password, newAddress()), /for this user/);
    // Only this user is locked: another signs in from the same address.
    const other = await makeUser("viewer");
    expect((await attempt(other, other.password, address)).status).toBe(200);
  });

  it("20 failures from one address, across usernames, lock the address out; other addresses are unaffected", async () => {
    const address = newAddress();
    for (let i = 1; i <= 20; i++) {
      const res = await attempt({ username: uniq(`guess${i}`) }, `guess-password-${i}`, address);
      expect(res.status, `failure ${i}`).toBe(401);
    }
    const user = await makeUser("viewer");
    expectLockedOut(await attempt(user, user.password, address), /from this address/);
    expect((await attempt(user, user.password, newAddress())).status).toBe(200);
    // Each failure spends a full scrypt check (unknown names too, so timing reveals nothing): 20 of them
    // need more than the default 30 s on a loaded 2-core machine.
  }, 120_000);

  it("a success clears the user's failure count", async () => {
    const user = await makeUser("viewer");
    const address = newAddress();
    for (let i = 1; i <= 4; i++) expect((await attempt(user, `wrong-password-${i}`, address)).status).toBe(401);
    expect((await attempt(user, user.password, address)).status).toBe(200);
    const rows = await sql("SELECT * FROM sign_in_throttle WHERE scope = 'user' AND key = $1", [user.username]);
    expect(rows).toEqual([]);
    // Four more failures: 8 in the window in all, but only 4 since the success, so not locked.
    for (let i = 5; i <= 8; i++) expect((await attempt(user, `wrong-password-${i}`, address)).status).toBe(401);
    expect((await attempt(user, user.password, address)).status).toBe(200);
  });
});

describe("ending sessions", () => {
  it("sign-out (DELETE /api/v1/session with Origin) ends the session: the old cookie then gets 401", async () => {
    const user = await makeUser("viewer");
    const res = await attempt(user, user.password, newAddress());
    expect(res.status).toBe(200);
    const out = await call(baseUrl, "DELETE", "/api/v1/session", { cookie: res.cookie, origin: baseUrl });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ signedOut: true });
    // The browser is told to drop the cookie…
    expect(out.headers.getSetCookie().some((c) => /^keyward\.session_token=;|Max-Age=0/i.test(c))).toBe(true);
    // …and a client that keeps it anyway is no one.
    const after = await call(baseUrl, "GET", "/api/v1/overview", { cookie: res.cookie });
    expect(after.status).toBe(401);
    expect(after.body.error.message).toMatch(/session has ended/);
    expect((await call(baseUrl, "GET", "/api/v1/session", { cookie: res.cookie })).body.user).toBeNull();
    const [row] = await sql<{ actor: string }>(
      "SELECT actor FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'sign_out' AND actor = $1",
      [`user:${user.username}`],
    );
    expect(row).toBeDefined();
  });

  it("an admin disabling a user (PATCH) ends that user's live session at once", async () => {
    const address = newAddress();
    const admin = await makeUser("admin");
    const victim = await makeUser("operator");
    const adminSession = await attempt(admin, admin.password, address);
    const victimSession = await attempt(victim, victim.password, address);
    expect((await call(baseUrl, "GET", "/api/v1/actions", { cookie: victimSession.cookie })).status).toBe(200);

    const patched = await call(baseUrl, "PATCH", `/api/v1/users/${victim.username}`, {
      cookie: adminSession.cookie,
      origin: baseUrl,
      body: { disabled: true },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.user).toMatchObject({ username: victim.username, disabled: true });
    expect((await call(baseUrl, "GET", "/api/v1/actions", { cookie: victimSession.cookie })).status).toBe(401);
    const [{ n }] = await sql<{ n: number }>(
      "SELECT count(*) AS n FROM auth_sessions s JOIN auth_users u ON u.id = s.user_id WHERE u.username = $1",
      [victim.username],
    );
    expect(n).toBe(0);
    // Nor can they sign in again.
    expect((await attempt(victim, victim.password, address)).body).toEqual(INVALID);
  });

  it("disabling through updateUser (as the CLI does) ends the live session too", async () => {
    const victim = await makeUser("viewer");
    const session = await attempt(victim, victim.password, newAddress());
    expect((await call(baseUrl, "GET", "/api/v1/overview", { cookie: session.cookie })).status).toBe(200);
    await updateUser(victim.username, { disabled: true }, cliPrincipal());
    expect((await call(baseUrl, "GET", "/api/v1/overview", { cookie: session.cookie })).status).toBe(401);
  });
});

describe("the operator action log", () => {
  let user: TestUser;
  let address: string;

  beforeAll(async () => {
    user = await makeUser("viewer");
    address = newAddress();
    // ok, then 5 failures (the last locks), then refused.
    expect((await attempt(user, user.password, address)).status).toBe(200);
    for (let i = 1; i <= 5; i++) expect((await attempt(user, `${user.password}-${i}`, address)).status).toBe(401);
    expect((await attempt(user, user.password, address)).status).toBe(429);
  });

  it("records every attempt as sign_in with its outcome, the user and the address", async () => {
    const rows = await signInRows(address);
    expect(rows.map((r) => r.detail.outcome)).toEqual(["ok", "failed", "failed", "failed", "failed", "failed", "refused"]);
    for (const r of rows) {
      expect(r.detail.target.id).toBe(user.username);
      expect(r.detail.address).toBe(address);
    }
    expect(rows[0].actor).toBe(`user:${user.username}`);
    expect(rows[1].actor).toBe("anonymous");
    expect(rows[1].detail.reason).toBe("wrong password");
    expect(rows[5].detail.reason).toMatch(/now locked out/);
    expect(rows[6].detail.reason).toMatch(/locked out \(user\)/);
  });

  it("takes the address your proxy appended last to X-Forwarded-For, not one the client put first", async () => {
    const proxied = newAddress();
    const spoofed = newAddress();
    const res = await call(baseUrl, "POST", "/api/v1/session", {
      origin: baseUrl,
      headers: { "x-forwarded-for": `${spoofed}, ${proxied}`, "x-keyward-client-ip": spoofed },
      body: { username: uniq("nobody"), password: "not-the-password-1" },
    });
    typed.push("not-the-password-1");
    expect(res.status).toBe(401);
    expect((await signInRows(proxied)).map((r) => r.detail.outcome)).toEqual(["failed"]);
    expect(await signInRows(spoofed)).toEqual([]);
  });

  it("never stores a password, right or wrong, anywhere in audit_events", async () => {
    expect(typed.length).toBeGreaterThan(20);
    for (const password of new Set(typed)) {
      const [{ n }] = await sql<{ n: number }>(
        "SELECT count(*) AS n FROM audit_events WHERE strpos(coalesce(detail::text, '') || coalesce(actor, ''), $1) > 0",
        [password],
      );
      expect(n, password).toBe(0);
    }
  });
});
