/**
 * CSRF against the real server: a change made with a session cookie must come from the console's own
 * origin (Origin header, or Sec-Fetch-Site: same-origin); anything else is 403 and changes nothing (checked
 * in the database). API keys are not sent by browsers on their own, so Bearer requests need no Origin.
 * Signing in from another origin (login CSRF) is refused too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { call, makeUser, signIn, signedInUser, startTestServer, type TestUser } from "@/test/setup/auth";
import type { Json } from "@/test/setup/json";

const EVIL = "http://evil.example";
const spawned: Server[] = [];
let baseUrl: string;
let admin: TestUser & { cookie: string };

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned));
  admin = await signedInUser(baseUrl, "admin");
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

const userCount = async (username: string) =>
  (await sql<{ n: number }>("SELECT count(*) AS n FROM auth_users WHERE username = $1", [username]))[0].n;
const isDisabled = async (username: string) =>
  (await sql<{ disabled: boolean }>("SELECT disabled FROM auth_users WHERE username = $1", [username]))[0].disabled;
const revokedAt = async (id: string) =>
  (await sql<{ revoked_at: Date | null }>("SELECT revoked_at FROM api_keys WHERE id = $1", [id]))[0].revoked_at;

function expectRefused(res: { status: number; body: Json }) {
  expect(res.status).toBe(403);
  expect(res.body.error.code).toBe("forbidden");
  expect(res.body.error.message).toMatch(/cross-origin/);
}

describe("a signed-in change from another origin is refused and changes nothing", () => {
  it("POST /api/v1/users with Origin: http://evil.example → 403, the user is not created", async () => {
    const username = uniq("csrf").toLowerCase();
    const res = await call(baseUrl, "POST", "/api/v1/users", { cookie: admin.cookie, origin: EVIL, body: { username, role: "admin" } });
    expectRefused(res);
    expect(await userCount(username)).toBe(0);
  });

  it("PATCH /api/v1/users/:name (disable) from another origin → 403, the user stays enabled and signed in", async () => {
    const victim = await signedInUser(baseUrl, "viewer");
    const res = await call(baseUrl, "PATCH", `/api/v1/users/${victim.username}`, {
      cookie: admin.cookie,
      origin: EVIL,
      body: { disabled: true },
    });
    expectRefused(res);
    expect(await isDisabled(victim.username)).toBe(false);
    expect((await call(baseUrl, "GET", "/api/v1/overview", { cookie: victim.cookie })).status).toBe(200);
  });

  it("DELETE /api/v1/api-keys/:id from another origin → 403, the key is not revoked and still works", async () => {
    const k = await makeApiKey(["claims:write"]);
    const res = await call(baseUrl, "DELETE", `/api/v1/api-keys/${k.id}`, { cookie: admin.cookie, origin: EVIL });
    expectRefused(res);
    expect(await revokedAt(k.id)).toBeNull();
    const source = await makeSource();
    const claim = await call(baseUrl, "POST", "/api/v1/claims", { key: k.key, body: { source, eventId: uniq("evt"), eventType: "t" } });
    expect(claim.status).toBe(201);
  });

  it("DELETE /api/v1/session (sign-out) from another origin → 403, the session goes on", async () => {
    const user = await signedInUser(baseUrl, "viewer");
    expectRefused(await call(baseUrl, "DELETE", "/api/v1/session", { cookie: user.cookie, origin: EVIL }));
    const who = await call(baseUrl, "GET", "/api/v1/session", { cookie: user.cookie });
    expect(who.body.user?.username).toBe(user.username);
  });

  it("an Origin of another port or scheme on the same host, or 'null', is another origin", async () => {
    const url = new URL(baseUrl);
    const otherPort = `http://${url.hostname}:${Number(url.port) === 65535 ? 1 : Number(url.port) + 1}`;
    for (const origin of [otherPort, "null", `http://localhost:${url.port}`]) {
      const username = uniq("csrf").toLowerCase();
      const res = await call(baseUrl, "POST", "/api/v1/users", { cookie: admin.cookie, origin, body: { username, role: "viewer" } });
      expect(res.status, origin).toBe(403);
      expect(await userCount(username)).toBe(0);
    }
  });

  it("without Origin and without Sec-Fetch-Site → 403; Sec-Fetch-Site: cross-site → 403", async () => {
    for (const headers of [{}, { "sec-fetch-site": "cross-site" }, { "sec-fetch-site": "same-site" }] as Record<string, string>[]) {
      const username = uniq("csrf").toLowerCase();
      const res = await call(baseUrl, "POST", "/api/v1/users", { cookie: admin.cookie, headers, body: { username, role: "viewer" } });
      expectRefused(res);
      expect(await userCount(username)).toBe(0);
    }
  });
});

describe("what is allowed", () => {
  it("same-origin (Origin = the console's URL) → the user is created", async () => {
    const username = uniq("csrf").toLowerCase();
    const res = await call(baseUrl, "POST", "/api/v1/users", { cookie: admin.cookie, origin: baseUrl, body: { username, role: "viewer" } });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ username, role: "viewer", disabled: false });
    expect(await userCount(username)).toBe(1);
  });

  it("Sec-Fetch-Site: same-origin without Origin → the key is revoked", async () => {
    const k = await makeApiKey(["read"]);
    const res = await call(baseUrl, "DELETE", `/api/v1/api-keys/${k.id}`, {
      cookie: admin.cookie,
      headers: { "sec-fetch-site": "same-origin" },
    });
    expect(res.status).toBe(200);
    expect(await revokedAt(k.id)).toBeInstanceOf(Date);
  });

  it("a signed-in GET needs no Origin (reading changes nothing)", async () => {
    const res = await call(baseUrl, "GET", "/api/v1/users", { cookie: admin.cookie });
    expect(res.status).toBe(200);
    expect(res.body.users.map((u: { username: string }) => u.username)).toContain(admin.username);
  });

  it("a Bearer-key POST needs no Origin, and a foreign Origin does not matter (browsers never send the key by themselves)", async () => {
    const { key } = await makeApiKey(["claims:write"]);
    const source = await makeSource();
    const plain = await call(baseUrl, "POST", "/api/v1/claims", { key, body: { source, eventId: uniq("evt"), eventType: "t" } });
    expect(plain.status).toBe(201);
    const foreign = await call(baseUrl, "POST", "/api/v1/claims", { key, origin: EVIL, body: { source, eventId: uniq("evt"), eventType: "t" } });
    expect(foreign.status).toBe(201);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n).toBe(2);
  });
});

describe("signing in from another origin (login CSRF)", () => {
  it("POST /api/v1/session with a foreign Origin, or none → 403, no cookie, no sign-in recorded", async () => {
    const user = await makeUser("viewer");
    const body = { username: user.username, password: user.password };
    const foreign = await call(baseUrl, "POST", "/api/v1/session", { origin: EVIL, body });
    expectRefused(foreign);
    expect(foreign.headers.getSetCookie()).toEqual([]);
    const none = await call(baseUrl, "POST", "/api/v1/session", { body });
    expectRefused(none);
    expect(none.headers.getSetCookie()).toEqual([]);
    const [{ n }] = await sql<{ n: number }>(
      "SELECT count(*) AS n FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'sign_in' AND detail->'target'->>'id' = $1",
      [user.username],
    );
    expect(n).toBe(0);
    // The same credentials from the console's own origin work: the refusal was about the origin.
    const ok = await signIn(baseUrl, user.username, user.password);
    expect(ok.status).toBe(200);
    expect(ok.cookie).toMatch(/keyward\.session_token=/);
  });
});
