/**
 * Security headers on the real server, and secrets kept out of answers and logs. API answers (the claim
 * fast path and Next routes alike) carry nosniff, a referrer policy and a CSP that forbids framing;
 * console pages carry a per-request script nonce that every script tag bears. The password and API keys
 * never appear in responses (other than the one that creates a key) or in the server's output.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeSource, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { call, makeUser, signIn, startTestServer, type HttpResult, type TestUser } from "@/test/setup/auth";

const spawned: Server[] = [];
let server: Server;
let baseUrl: string;
let admin: TestUser & { cookie: string };

beforeAll(async () => {
  ({ server, baseUrl } = await startTestServer(spawned));
  const user = await makeUser("admin");
  const res = await signIn(baseUrl, user.username, user.password);
  expect(res.status).toBe(200);
  admin = { ...user, cookie: res.cookie };
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

function expectApiHeaders(res: HttpResult, what: string) {
  expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
  expect(res.headers.get("referrer-policy"), what).toBeTruthy();
  const csp = res.headers.get("content-security-policy") ?? "";
  expect(csp, what).toMatch(/frame-ancestors 'none'/);
}

describe("API responses carry the security headers", () => {
  it("the claim fast path: POST /api/v1/claims (201, and a 401)", async () => {
    const { key } = await makeApiKey(["claims:write"]);
    const source = await makeSource();
    const ok = await call(baseUrl, "POST", "/api/v1/claims", { key, body: { source, eventId: uniq("evt"), eventType: "t" } });
    expect(ok.status).toBe(201);
    expectApiHeaders(ok, "claim 201");
    const refused = await call(baseUrl, "POST", "/api/v1/claims", { body: { source, eventId: uniq("evt"), eventType: "t" } });
    expect(refused.status).toBe(401);
    expectApiHeaders(refused, "claim 401");
  });

  it("a Next route: GET /api/v1/session (anonymous and signed in), and an error from a Next route", async () => {
    const anon = await call(baseUrl, "GET", "/api/v1/session");
    expect(anon.status).toBe(200);
    expect(anon.body.user).toBeNull();
    expectApiHeaders(anon, "session anonymous");
    const signedIn = await call(baseUrl, "GET", "/api/v1/session", { cookie: admin.cookie });
    expect(signedIn.body.user.username).toBe(admin.username);
    expectApiHeaders(signedIn, "session signed in");
    const denied = await call(baseUrl, "GET", "/api/v1/users");
    expect(denied.status).toBe(401);
    expectApiHeaders(denied, "users 401");
  });
});

/** The CSP's script nonce, and every <script …> opening tag in the HTML. */
function pageParts(res: HttpResult): { nonce: string; csp: string; scripts: string[] } {
  const csp = res.headers.get("content-security-policy") ?? "";
  const nonce = /script-src[^;]*'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1] ?? "";
  const scripts = res.text.match(/<script\b[^>]*>/gi) ?? [];
  return { nonce, csp, scripts };
}

function expectNoncedPage(res: HttpResult, what: string): string {
  expect(res.status, what).toBe(200);
  expect(res.headers.get("content-type"), what).toMatch(/text\/html/);
  const { nonce, csp, scripts } = pageParts(res);
  expect(nonce, `${what}: CSP ${csp}`).toMatch(/^[A-Za-z0-9+/=]{16,}$/);
  expect(csp, what).toMatch(/frame-ancestors 'none'/);
  expect(csp, what).not.toMatch(/script-src[^;]*'unsafe-inline'/);
  expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
  expect(scripts.length, `${what}: the page renders scripts`).toBeGreaterThan(0);
  const without = scripts.filter((tag) => !tag.includes(`nonce="${nonce}"`));
  expect(without, `${what}: script tags without the response's nonce`).toEqual([]);
  return nonce;
}

describe("console pages: a per-request CSP nonce on every script", () => {
  it("/sign-in: each script bears the nonce, and the nonce differs between two requests", async () => {
    const first = await call(baseUrl, "GET", "/sign-in");
    const second = await call(baseUrl, "GET", "/sign-in");
    const a = expectNoncedPage(first, "/sign-in #1");
    const b = expectNoncedPage(second, "/sign-in #2");
    expect(a).not.toBe(b);
  });

  it("/ when signed in: each script bears the nonce", async () => {
    const res = await call(baseUrl, "GET", "/", { cookie: admin.cookie });
    const nonce = expectNoncedPage(res, "/ signed in");
    // The nonce is this response's, not the sign-in page's from before.
    const again = await call(baseUrl, "GET", "/", { cookie: admin.cookie });
    expect(expectNoncedPage(again, "/ signed in #2")).not.toBe(nonce);
  });
});

describe("secrets stay out of answers and logs", () => {
  it("the password and API keys appear in no response and not in the server's output", async () => {
    const user = await makeUser("viewer");
    const responses: HttpResult[] = [];

    // A successful sign-in, a wrong one, and bodies the schema rejects (password too long, an extra field).
    const ok = await signIn(baseUrl, user.username, user.password);
    expect(ok.status).toBe(200);
    responses.push(ok);
    const wrong = await signIn(baseUrl, user.username, `${user.password}-wrong`);
    expect(wrong.status).toBe(401);
    responses.push(wrong);
    const tooLong = await call(baseUrl, "POST", "/api/v1/session", {
      origin: baseUrl,
      body: { username: user.username, password: user.password + "x".repeat(300) },
    });
    expect(tooLong.status).toBe(422);
    responses.push(tooLong);
    const extra = await call(baseUrl, "POST", "/api/v1/session", {
      origin: baseUrl,
      body: { username: user.username, password: user.password, remember: true },
    });
    expect(extra.status).toBe(422);
    responses.push(extra);
    const foreign = await call(baseUrl, "POST", "/api/v1/session", {
      origin: "http://evil.example",
      body: { username: user.username, password: user.password },
    });
    expect(foreign.status).toBe(403);
    responses.push(foreign);

    // A revoked key and a malformed one, on the fast path and on a Next route.
    const k = await makeApiKey(["read"]);
    const revoke = await call(baseUrl, "DELETE", `/api/v1/api-keys/${k.id}`, { cookie: admin.cookie, origin: baseUrl });
    expect(revoke.status).toBe(200);
    responses.push(revoke);
    const forged = `${k.key.slice(0, -3)}zzz`;
    for (const [method, path] of [
      ["POST", "/api/v1/claims"],
      ["GET", "/api/v1/overview"],
    ] as const) {
      for (const key of [k.key, forged, `not-a-key-${user.password}`]) {
        const res = await call(baseUrl, method, path, { key, ...(method === "POST" ? { body: {} } : {}) });
        expect(res.status, `${method} ${path}`).toBe(401);
        responses.push(res);
      }
    }

    const secrets = [user.password, k.key, k.key.slice(-43), forged];
    for (const res of responses) {
      const everything = res.text + JSON.stringify([...res.headers]);
      for (const s of secrets) expect(everything).not.toContain(s);
    }
    // All the server ever printed, its shutdown included: stopped, and its output read until its pipes closed
    // (what it prints about a request may come after the answer). The file's last test: nothing runs after it.
    const { stdout, stderr } = server.child;
    const closed = stdout!.closed && stderr!.closed ? Promise.resolve() : new Promise((r) => server.child.once("close", r));
    await stopServer(server);
    await closed;
    for (const s of secrets) expect(server.output()).not.toContain(s);
  });
});
