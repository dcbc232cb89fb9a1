/**
 * Database faults against a real server (issue 11, "Database faults"): `keyward start` talks to this
 * run's PostgreSQL through a TCP proxy this file controls (test/setup/tcp-proxy.ts), which it switches to
 *   refuse     (the database is down): every route answers 503 + Retry-After + the error shape, and the
 *              console shows its "database unreachable" page instead of an error page;
 *   blackhole  (packets vanish, sockets stay open): every request still answers 503 within
 *              connect timeout + statement timeout + 1 s, and once the network heals normal answers
 *              resume within 10 s without a restart, on connections that never carry a stale answer;
 * and black-holes the answer of one claim after it reached the database (the ambiguous claim): the retry
 * with the same attemptId gets the claim back (`repeat`), anyone else gets `duplicate`.
 * Small timeouts keep it fast: connect 1 s, statement 1 s, so the bound is 3 s.
 */
import { PrismaPg } from "@prisma/adapter-pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createPool } from "@/lib/db/client";
import { PrismaClient } from "@/lib/db/generated/client";
import { isUnavailable } from "@/lib/db/sql";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { call, signedInUser, startTestServer, type CallOptions, type HttpResult } from "@/test/setup/auth";
import { discoverApiRoutes, type ApiRoute } from "@/test/setup/routes";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";
import { launchChromium, signedInContext } from "@/test/setup/browser";

const CONNECT_TIMEOUT_MS = 1000;
const STATEMENT_TIMEOUT_MS = 1000;
/** The promise: no request waits longer than this for a database that does not answer. */
const BOUND_MS = CONNECT_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + 1000;
const RECOVERY_MS = 10_000;
const MAINTENANCE_SECRET = "fault-test-maintenance-secret-0123456789";

const spawned: Server[] = [];
let proxy: TcpProxy;
let baseUrl: string;
let cookie: string;
let key: string;
let source: string;
let routes: ApiRoute[];

beforeAll(async () => {
  const target = new URL(process.env.DATABASE_URL!);
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
  ({ baseUrl } = await startTestServer(spawned, {
    DATABASE_URL: proxy.url(process.env.DATABASE_URL!),
    KEYWARD_DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
    KEYWARD_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
    KEYWARD_DB_POOL_MAX: "6",
    // Background jobs off: the answers measured here are the requests' own.
    KEYWARD_PRUNE_INTERVAL_SECONDS: "0",
    KEYWARD_SAMPLE_INTERVAL_SECONDS: "0",
    KEYWARD_REPLAY_WORKER: "0",
    KEYWARD_MAINTENANCE_SECRET: MAINTENANCE_SECRET,
  }));
  cookie = (await signedInUser(baseUrl, "admin")).cookie;
  key = (await makeApiKey(["claims:write", "claims:read", "deadletters:write", "operator"])).key;
  source = await makeSource();
  routes = await discoverApiRoutes();
}, 120_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  await proxy?.close();
});

/** The answer and how long it took; fails fast (instead of at the test's timeout) when none comes at all. */
async function timed<T>(fn: () => Promise<T>, giveUpMs = BOUND_MS + 5000): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${giveUpMs} ms (the bound is ${BOUND_MS} ms)`)), giveUpMs);
  });
  try {
    const result = await Promise.race([fn(), hang]);
    return { result, ms: performance.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/** What is wrong with an answer that should be a 503 (empty when it is right). */
function not503(res: HttpResult): string[] {
  const problems: string[] = [];
  if (res.status !== 503) problems.push(`status ${res.status}`);
  if (!/^\d+$/.test(res.headers.get("retry-after") ?? "") || Number(res.headers.get("retry-after")) <= 0) problems.push("no Retry-After");
  const e = (res.body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (!e || e.code !== "database_unavailable" || typeof e.message !== "string") problems.push(`body ${res.text.slice(0, 120)}`);
  if (/postgres(ql)?:\/\/|127\.0\.0\.1/.test(res.text)) problems.push("leaks the database address");
  return problems;
}

const claim = (body: Record<string, unknown>, o: CallOptions = {}) =>
  call(baseUrl, "POST", "/api/v1/claims", { key, body: { source, eventType: "t", ...body }, ...o });

/** Claims fresh events until one answers 201; how long that took. */
async function recoveryTime(): Promise<number> {
  const started = performance.now();
  const unexpected: string[] = []; // anything but 503 before the 201 (kept aside: waitFor would retry an assertion)
  await vi.waitFor(
    async () => {
      const res = await claim({ eventId: uniq("recover") });
      if (res.status === 201) return;
      if (res.status !== 503) unexpected.push(`${res.status} ${res.text}`);
      throw new Error(`no recovery within ${RECOVERY_MS + BOUND_MS} ms: ${res.status} ${res.text}`);
    },
    { timeout: RECOVERY_MS + BOUND_MS, interval: 100 },
  );
  expect(unexpected).toEqual([]);
  return performance.now() - started;
}

/** After a fault: many requests at once, each answered correctly (no connection carries a stale answer). */
async function allHealthy() {
  const ids = Array.from({ length: 24 }, () => uniq("healthy"));
  const answers = await Promise.all(ids.map((eventId) => claim({ eventId })));
  expect(answers.map((a) => a.status)).toEqual(ids.map(() => 201));
  expect(answers.map((a) => a.body.eventId)).toEqual(ids);
  const again = await Promise.all(ids.map((eventId) => claim({ eventId })));
  expect(again.map((a) => [a.status, a.body.outcome])).toEqual(ids.map(() => [200, "duplicate"]));
  expect((await call(baseUrl, "GET", "/api/v1/session", { cookie })).body.user).toBeTruthy();
}

describe("database faults through a TCP proxy", () => {
  it("healthy through the proxy", async () => {
    expect((await claim({ eventId: uniq("ok") })).status).toBe(201);
    expect(routes.length).toBeGreaterThanOrEqual(40);
  });

  it("database down (connections refused): every route answers 503 + Retry-After + the error shape, for a session and for an API key", async () => {
    const outputBefore = spawned[0].output().length;
    proxy.setMode("refuse");
    try {
      const failures: string[] = [];
      for (const r of routes) {
        const body = r.method === "GET" || r.method === "DELETE" ? undefined : {};
        for (const [who, auth] of [
          ["session", { cookie, origin: baseUrl }],
          ["api key", { key }],
        ] as const) {
          const { result, ms } = await timed(() => call(baseUrl, r.method, r.path, { ...auth, body }));
          const problems = not503(result);
          if (ms > BOUND_MS) problems.push(`took ${Math.round(ms)} ms`);
          if (problems.length) failures.push(`${r.method} ${r.urlPattern} (${who}): ${problems.join(", ")}`);
        }
      }
      // The public routes without credentials, where the route itself needs the database.
      const anonymous: [string, string, CallOptions][] = [
        ["GET", "/api/v1/session", {}],
        ["POST", "/api/v1/session", { origin: baseUrl, body: { username: "someone", password: "a-long-enough-password" } }],
        ["POST", "/api/v1/maintenance/prune/external", { headers: { "x-keyward-maintenance-secret": MAINTENANCE_SECRET } }],
      ];
      for (const [method, path, o] of anonymous) {
        const problems = not503(await call(baseUrl, method, path, o));
        if (problems.length) failures.push(`${method} ${path} (anonymous): ${problems.join(", ")}`);
      }
      expect(failures).toEqual([]);

      // The console: its pages send the browser to the "database unreachable" page, not to an error page,
      // naming the page to come back to (none for the Overview and the sign-in page).
      for (const [path, o, back] of [
        ["/", { cookie }, null],
        ["/sources?x=1", { cookie }, "/sources?x=1"],
        ["/sign-in", {}, null],
      ] as const) {
        const page = await call(baseUrl, "GET", path, o);
        expect([303, 307, 308], `${path}: ${page.status}`).toContain(page.status);
        const location = new URL(page.headers.get("location")!, baseUrl);
        expect(location.pathname).toBe("/unavailable");
        expect(location.searchParams.get("next"), path).toBe(back);
      }
      const unavailable = await call(baseUrl, "GET", "/unavailable");
      expect(unavailable.status).toBe(200);
      expect(unavailable.text).toContain("Database unreachable");
      expect(unavailable.text).toContain("Retry now");
      // The log says the database is down in one line per 10 s, not a stack trace per session check.
      const log = spawned[0].output().slice(outputBefore);
      expect(log).not.toMatch(/\[Better Auth\]|^\s+at /m);
      expect(log).toMatch(/sign-in or session check failed: the database is unavailable/);
      expect(log.match(/sign-in or session check failed/g)!.length).toBeLessThanOrEqual(3);
    } finally {
      proxy.setMode("forward");
    }
    const recovered = await recoveryTime();
    console.info(`[faults] database back: first 201 after ${Math.round(recovered)} ms`);
    expect(recovered).toBeLessThanOrEqual(RECOVERY_MS);
    await allHealthy();
    expect((await call(baseUrl, "GET", "/", { cookie })).status).toBe(200);
  }, 180_000);

  it(`black hole: every request answers 503 within connect + statement timeout + 1 s (${BOUND_MS} ms); recovery within 10 s of healing`, async () => {
    // Warm the pool so that both kinds of victims exist: pooled connections that go silent mid-query, and
    // new connections that are accepted but never answered.
    await Promise.all(Array.from({ length: 6 }, () => claim({ eventId: uniq("warm") })));
    proxy.setMode("blackhole");
    try {
      const burst = () =>
        Promise.all([
          ...Array.from({ length: 8 }, () => timed(() => claim({ eventId: uniq("bh") }))),
          timed(() => call(baseUrl, "POST", "/api/v1/claims/batch", { key, body: { source, events: [{ eventId: uniq("bh"), eventType: "t" }] } })),
          timed(() => call(baseUrl, "GET", "/api/v1/session", { cookie })),
          timed(() => call(baseUrl, "GET", "/api/v1/session")),
          timed(() => call(baseUrl, "GET", "/api/v1/sources", { cookie })),
          timed(() => call(baseUrl, "GET", "/api/v1/audit", { key })),
        ]);
      // Twice: the second burst meets only fresh connection attempts (the first one's were destroyed).
      for (let round = 1; round <= 2; round++) {
        const answers = await burst();
        console.info(`[faults] black hole round ${round}: slowest answer ${Math.round(Math.max(...answers.map((a) => a.ms)))} ms (bound ${BOUND_MS} ms)`);
        const late = answers.filter((a) => a.ms > BOUND_MS).map((a) => Math.round(a.ms));
        expect(late, `round ${round}: answers slower than ${BOUND_MS} ms`).toEqual([]);
        const wrong = answers.map((a) => not503(a.result)).filter((p) => p.length);
        expect(wrong, `round ${round}`).toEqual([]);
      }
    } finally {
      proxy.setMode("forward");
    }
    const recovered = await recoveryTime();
    console.info(`[faults] black hole healed: first 201 after ${Math.round(recovered)} ms`);
    expect(recovered).toBeLessThanOrEqual(RECOVERY_MS);
    await allHealthy();
  }, 120_000);

  it("a claim whose answer was lost after it committed: the retry with its attemptId gets it back (repeat, same token), anyone else duplicate", async () => {
    const eventId = uniq("lost");
    const attemptId = uniq("attempt");
    proxy.blackholeAfter(eventId);
    try {
      const { result: lost, ms } = await timed(() => claim({ eventId, attemptId }));
      expect(not503(lost)).toEqual([]);
      expect(ms).toBeLessThanOrEqual(BOUND_MS);
    } finally {
      proxy.setMode("forward");
    }
    // The claim did commit: that is the ambiguity the attemptId resolves.
    const [row] = await sql<{ claim_token: string; attempt_id: string }>(
      "SELECT claim_token, attempt_id FROM dedup_keys WHERE source = $1 AND event_id = $2",
      [source, eventId],
    );
    expect(row.attempt_id).toBe(attemptId);

    const retry = await claim({ eventId, attemptId });
    expect(retry.status).toBe(201);
    expect(retry.body).toMatchObject({ outcome: "claimed", repeat: true, claimToken: row.claim_token });
    const stranger = await claim({ eventId });
    expect([stranger.status, stranger.body.outcome, stranger.body.repeat]).toEqual([200, "duplicate", undefined]);
    const other = await claim({ eventId, attemptId: `${attemptId}-2` });
    expect([other.status, other.body.outcome]).toEqual([200, "duplicate"]);
    const audit = await sql<{ kind: string }>("SELECT kind FROM audit_events WHERE source = $1 AND event_id = $2", [source, eventId]);
    expect(audit.map((a) => a.kind)).toEqual(["claimed"]);
  }, 60_000);

  it("a leased batch whose answer was lost: the retry with the batch's attemptId gets every claim back, and each completes with its token", async () => {
    const ids = [uniq("lost-a"), uniq("lost-b"), uniq("lost-c")];
    const batch = { source, attemptId: uniq("batch"), leaseSeconds: 60, events: ids.map((eventId) => ({ eventId, eventType: "t" })) };
    proxy.blackholeAfter(ids[0]);
    try {
      const lost = await call(baseUrl, "POST", "/api/v1/claims/batch", { key, body: batch });
      expect(not503(lost)).toEqual([]);
    } finally {
      proxy.setMode("forward");
    }
    const retry = await call(baseUrl, "POST", "/api/v1/claims/batch", { key, body: batch });
    expect(retry.status).toBe(200);
    const results = retry.body.results as { outcome: string; repeat?: boolean; claimToken?: string; eventId: string }[];
    expect(results.map((r) => [r.outcome, r.repeat])).toEqual(ids.map(() => ["claimed", true]));
    // Someone else meanwhile: the leases are held, so in flight.
    const stranger = await call(baseUrl, "POST", "/api/v1/claims/batch", { key, body: { ...batch, attemptId: undefined } });
    expect(stranger.body.results.map((r: { outcome: string }) => r.outcome)).toEqual(ids.map(() => "in_flight"));
    for (const r of results) {
      const done = await call(baseUrl, "POST", "/api/v1/claims/complete", { key, body: { source, eventId: r.eventId, claimToken: r.claimToken } });
      expect(done.status, done.text).toBe(200);
    }
  }, 60_000);

  it("a connection whose query got no answer is destroyed, never handed out again: pool.query, a checked-out client, a Prisma transaction", async () => {
    const saved = process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;
    process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = "300";
    const pool = createPool(proxy.url(process.env.DATABASE_URL!));
    if (saved === undefined) delete process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;
    else process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = saved;
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    const removed: unknown[] = [];
    pool.on("remove", (c) => removed.push(c));
    try {
      const silent = async (marker: string, fn: () => Promise<unknown>) => {
        proxy.blackholeAfter(marker);
        const err = await timed(() => fn().then(() => null, (e: unknown) => e), 3000);
        expect(isUnavailable(err.result), String(err.result)).toBe(true);
        expect(err.ms).toBeLessThan(300 + 500 + 500);
      };
      const m1 = uniq("m");
      await silent(m1, () => pool.query(`SELECT '${m1}'`));
      const m2 = uniq("m");
      const client = await pool.connect();
      await silent(m2, () => client.query(`SELECT '${m2}'`));
      client.release(); // without an error, as Prisma's adapter releases a transaction's connection
      const m3 = uniq("m");
      await silent(m3, () => prisma.$transaction((tx) => tx.$queryRawUnsafe(`SELECT '${m3}'`)));
      await expect.poll(() => removed.length, { timeout: 3000 }).toBe(3);
      // Healed: the pool answers on fresh connections, each answer its own.
      proxy.setMode("forward");
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => pool.query<{ n: number }>("SELECT $1::int AS n", [i])));
      expect(answers.map((a) => a.rows[0].n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    } finally {
      proxy.setMode("forward");
      await prisma.$disconnect();
      await pool.end();
    }
  }, 60_000);

  it("the console in a browser: an open screen shows the 'database unreachable' banner, a page load shows that page, and it returns by itself to the page asked for once the database is back", async () => {
    const browser = await launchChromium();
    try {
      const context = await signedInContext(browser, baseUrl);
      const page = await context.newPage();
      await page.goto(`${baseUrl}/`);
      await page.getByRole("heading", { level: 1 }).first().waitFor();
      proxy.setMode("refuse");
      // The Overview polls every 10 s; its failing read (after react-query's retries) raises the banner.
      const banner = page.getByTestId("database-unreachable");
      await banner.waitFor({ timeout: 30_000 });
      expect(await banner.textContent()).toContain("Database unreachable");
      expect(await banner.getByRole("button", { name: "Retry now" }).isVisible()).toBe(true);

      // A page load while the database is down: the "database unreachable" page, not an error page.
      await page.goto(`${baseUrl}/sources`);
      expect(new URL(page.url()).pathname).toBe("/unavailable");
      await page.getByRole("heading", { name: "Database unreachable" }).waitFor();
      await page.getByRole("button", { name: "Retry now" }).click();
      expect(new URL(page.url()).pathname).toBe("/unavailable");

      proxy.setMode("forward");
      // Back on the page that was asked for, not the Overview.
      await page.waitForURL((u) => u.pathname === "/sources", { timeout: 10_000 });
      await page.getByRole("heading", { level: 1, name: "Sources" }).waitFor();
      expect(await page.getByRole("heading", { name: "Database unreachable" }).count()).toBe(0);
    } finally {
      proxy.setMode("forward");
      await browser.close();
    }
  }, 90_000);

  it("refuses a malformed attemptId with 422 naming the field", async () => {
    for (const attemptId of ["", "has space", "x".repeat(129), 42]) {
      const res = await claim({ eventId: uniq("bad"), attemptId });
      expect(res.status, JSON.stringify(attemptId)).toBe(422);
      expect(JSON.stringify(res.body.error)).toContain("attemptId");
    }
  });
});
