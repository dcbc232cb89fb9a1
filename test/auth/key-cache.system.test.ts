/**
 * The API-key cache across servers (lib/auth/api-key-cache.ts): two real `keyward start` processes on this
 * run's database. A key revoked through one server is refused by the other once REVOCATION_BOUND_MS has
 * passed since the revocation answered (the bound is a correctness rule, so the test waits it out and then
 * requires every answer to be 401; it measures nothing). And when the other server's listener connection is
 * lost (pg_terminate_backend) or black-holed, that server stops answering from memory and reads each key
 * from the database, so a revocation is refused at once, until it has listened again.
 *
 * Server B's listener goes through a TCP proxy (KEYWARD_MIGRATE_DATABASE_URL, which the listener uses) so
 * the test can keep it from reconnecting; B's pool goes directly to PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { REVOCATION_BOUND_MS } from "@/lib/auth/api-key-cache";
import { call, signedInUser, startTestServer, type TestServer } from "@/test/setup/auth";
import { makeSource, sql, fileDatabaseUrl } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";
import { timePasses } from "@/test/setup/time";

vi.setConfig({ testTimeout: 60_000 });

const METRICS_TOKEN = "key-cache-test-metrics-token-0123456789abcdef";
const spawned: Server[] = [];
let proxy: TcpProxy;
let a: TestServer;
let b: TestServer;
let admin: { cookie: string };
let source: string;

type CacheState = { trusted: boolean; hits: number; misses: number };

async function cacheState(server: TestServer): Promise<CacheState> {
  const res = await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  return {
    trusted: value(/^keyward_api_key_cache_trusted (\S+)$/m) === 1,
    hits: value(/^keyward_api_key_cache_lookups_total\{result="hit"\} (\S+)$/m),
    misses: value(/^keyward_api_key_cache_lookups_total\{result="miss"\} (\S+)$/m),
  };
}

/**
 * Polls the server's /metrics until its cache is (or is no longer) trusted; fails after 20 s. The listener
 * pings only while the cache is in use, so waiting for trust keeps it in use (a request with a bad key).
 */
async function untilTrusted(server: TestServer, want: boolean): Promise<void> {
  await vi.waitFor(
    async () => {
      if (want) await call(server.baseUrl, "POST", "/api/v1/claims", { key: "kw_000000000000_" + "x".repeat(43), body: {} });
      expect((await cacheState(server)).trusted, `the API-key cache of ${server.baseUrl} is ${want ? "trusted" : "untrusted"}`).toBe(want);
    },
    { timeout: 20_000, interval: 50 },
  );
}

let seq = 0;
async function claim(server: TestServer, key: string): Promise<number> {
  const res = await call(server.baseUrl, "POST", "/api/v1/claims", {
    key,
    body: { source, eventId: `evt-${process.pid}-${++seq}`, eventType: "t" },
  });
  return res.status;
}

async function revokeThrough(server: TestServer, id: string): Promise<void> {
  const res = await call(server.baseUrl, "DELETE", `/api/v1/api-keys/${id}`, { cookie: admin.cookie, origin: server.baseUrl });
  expect(res.status).toBe(200);
}

/** B's listener connection, by the application_name it carries (keyward-key-listener-<pid>). */
async function listenerPids(server: TestServer): Promise<number[]> {
  const rows = await sql<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [
    `keyward-key-listener-${server.server.child.pid}`,
  ]);
  return rows.map((r) => r.pid);
}

beforeAll(async () => {
  const databaseUrl = fileDatabaseUrl();
  proxy = await startTcpProxy({ host: new URL(databaseUrl).hostname, port: Number(new URL(databaseUrl).port || 5432) });
  a = await startTestServer(spawned, { KEYWARD_METRICS_TOKEN: METRICS_TOKEN });
  b = await startTestServer(spawned, { KEYWARD_METRICS_TOKEN: METRICS_TOKEN, KEYWARD_MIGRATE_DATABASE_URL: proxy.url(databaseUrl) });
  admin = await signedInUser(a.baseUrl, "admin");
  source = await makeSource();
});

afterAll(async () => {
  await Promise.all(spawned.map((s) => stopServer(s)));
  await proxy?.close();
});

describe("API-key cache across servers", () => {
  it(`a key revoked on one server is refused by the other within ${REVOCATION_BOUND_MS} ms`, async () => {
    const { key, id } = await makeApiKey(["claims:write"]);
    await untilTrusted(b, true);
    expect(await claim(b, key)).toBe(201); // read from the database, remembered
    const before = await cacheState(b);
    for (let i = 0; i < 3; i++) expect(await claim(b, key)).toBe(201);
    const after = await cacheState(b);
    // B answered these from memory: the revocation below must reach it through the listener.
    expect(after.hits - before.hits).toBeGreaterThanOrEqual(3);
    expect(after.misses).toBe(before.misses);

    await revokeThrough(a, id);
    expect(await claim(a, key)).toBe(401); // at once where it was revoked
    await timePasses(REVOCATION_BOUND_MS, "the revocation bound: from here on B must refuse the key on every request");
    for (let i = 0; i < 5; i++) expect(await claim(b, key)).toBe(401);
  });

  it("listener killed with pg_terminate_backend: reads every key until it listens again", async () => {
    const { key, id } = await makeApiKey(["claims:write"]);
    await untilTrusted(b, true);
    expect(await claim(b, key)).toBe(201);
    const [pid] = await listenerPids(b);
    expect(pid).toBeGreaterThan(0);

    proxy.setMode("refuseNew"); // it cannot come back until the test says so
    const [{ ok }] = await sql<{ ok: boolean }>("SELECT pg_terminate_backend($1) AS ok", [pid]);
    expect(ok).toBe(true);
    await untilTrusted(b, false);

    const before = await cacheState(b);
    expect(await claim(b, key)).toBe(201);
    expect((await cacheState(b)).misses).toBeGreaterThan(before.misses); // read from the database
    await revokeThrough(a, id);
    expect(await claim(b, key)).toBe(401); // no wait: nothing is answered from memory now
    expect(await listenerPids(b)).toEqual([]);

    proxy.setMode("forward");
    await untilTrusted(b, true);
    expect((await listenerPids(b)).length).toBe(1);
    const { key: fresh } = await makeApiKey(["claims:write"]);
    expect(await claim(b, fresh)).toBe(201);
    const mid = await cacheState(b);
    expect(await claim(b, fresh)).toBe(201);
    expect((await cacheState(b)).hits).toBeGreaterThan(mid.hits); // from memory again
    expect(await claim(b, key)).toBe(401);
  });

  it("listener black-holed: the cache stops trusting itself, a revocation is refused at once", async () => {
    const { key, id } = await makeApiKey(["claims:write"]);
    await untilTrusted(b, true);
    expect(await claim(b, key)).toBe(201);
    expect(await claim(b, key)).toBe(201);

    proxy.setMode("blackhole"); // its pings stop coming back; the connection stays open
    await untilTrusted(b, false);
    await revokeThrough(a, id);
    expect(await claim(b, key)).toBe(401);

    proxy.setMode("forward");
    await untilTrusted(b, true); // the stuck connection timed out and a new one listens
    expect(await claim(b, key)).toBe(401);
  });
});
