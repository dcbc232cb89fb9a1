/**
 * Redis as the claim path's first line (lib/claims/redis.ts), with real servers, a private redis-server
 * (started on a free port, stopped by its PID) and this file's own database (the servers register Redis use
 * in its settings, which makes every release elsewhere move the namespace: not in the shared database).
 *
 * Proved: a duplicate is answered from Redis without PostgreSQL and still counted (the key's duplicate_count
 * catches up); Redis never answers for a repeat of the attempt that made the key, nor for a payload
 * mismatch; a key released on one server is not answered `duplicate` from Redis by the other; a source whose
 * claims are rarely duplicates is not looked up in Redis until duplicates come; with Redis
 * stopped, or black-holed behind a TCP proxy, claims stay correct and answer within a bound, and Redis is
 * used again once it is back.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import Redis from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { call, startTestServer, type HttpResult, type TestServer } from "@/test/setup/auth";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { redisCmd } from "@/test/setup/redis";
import { BIN, ROOT, reservePort, stopServer, type Server } from "@/test/setup/server";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";

vi.setConfig({ testTimeout: 60_000 });


const METRICS_TOKEN = "redis-test-metrics-token-0123456789abcdefghij";
const spawned: Server[] = [];
let redisPort: number;
let redisProc: ChildProcess | undefined;
let proxy: TcpProxy;
let a: TestServer;
let b: TestServer;
let viaProxy: TestServer;
let key: string;
let source: string;

/** Until a wait on the servers' answers gives up: each comes within a few requests, seconds on a loaded machine. */
const ANSWERED = { timeout: 20_000, interval: 50 };

async function startRedisServer(): Promise<void> {
  redisProc = spawn("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
    stdio: "ignore",
  });
  await vi.waitFor(() => redisCmd(redisPort, "PING"), { timeout: 10_000, interval: 50 });
}

async function stopRedisServer(): Promise<void> {
  const p = redisProc;
  redisProc = undefined;
  if (!p || p.exitCode !== null) return;
  const exited = new Promise((r) => p.once("exit", r));
  p.kill("SIGTERM"); // by its PID: this file's own redis-server
  await exited;
}

async function redisStats(server: TestServer): Promise<Record<string, number>> {
  const res = await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^keyward_redis_lookups_total\{result="(\w+)"\} (\S+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/**
 * Sends `duplicate` (a claim of a key the server holds) until Redis answers it (a hit: the entry written, the
 * server connected and its listener trusted); every answer must be 200. Resolves to the number sent.
 */
async function untilRedisAnswers(server: TestServer, duplicate: () => Promise<HttpResult>): Promise<number> {
  let sent = 0;
  const last = await vi
    .waitFor(async () => {
      const before = (await redisStats(server)).hit ?? 0;
      const r = await duplicate();
      sent++;
      if (r.status === 200 && ((await redisStats(server)).hit ?? 0) === before) throw new Error("not answered from Redis");
      return r;
    }, ANSWERED)
    .catch(async (err: Error) => {
      throw new Error(`${server.baseUrl} never answered from Redis (${err.message}): ${JSON.stringify(await redisStats(server))}\n${server.server.output().slice(-3000)}`);
    });
  expect(last.status, last.text).toBe(200);
  return sent;
}

/** Waits until the server can use Redis (connected, its listener trusted): a hit proves it. */
const untilRedisHit = (server: TestServer, eventId: string) => untilRedisAnswers(server, () => claim(server, { eventId }));

async function claim(server: TestServer, body: Record<string, unknown>) {
  return call(server.baseUrl, "POST", "/api/v1/claims", { key, body: { source, eventType: "t", ...body } });
}

/** The event ids of this source that Redis holds an entry for. */
async function entriesOf(of: string): Promise<string[]> {
  const r = new Redis({ port: redisPort, maxRetriesPerRequest: 0 });
  try {
    return (await r.keys(`{kw:*}k:${of}/*`)).map((k) => k.slice(k.indexOf(`}k:${of}/`) + `}k:${of}/`.length)).sort();
  } finally {
    r.disconnect();
  }
}

/** Live tombstones of this source's keys, over every bucket's meta key. */
async function tombstones(of: string): Promise<number> {
  const r = new Redis({ port: redisPort, maxRetriesPerRequest: 0 });
  try {
    let n = 0;
    for (const meta of await r.keys("{kw:*}m")) {
      n += (await r.zrangebyscore(meta, Date.now(), "(+inf")).filter((m) => m.includes(`}k:${of}/`)).length;
    }
    return n;
  } finally {
    r.disconnect();
  }
}

beforeAll(async () => {
  redisPort = await reservePort();
  await startRedisServer();
  proxy = await startTcpProxy({ host: "127.0.0.1", port: redisPort });
  const env = { KEYWARD_METRICS_TOKEN: METRICS_TOKEN, KEYWARD_REDIS_URL: `redis://127.0.0.1:${redisPort}`, KEYWARD_REDIS_TIMEOUT_MS: "50" };
  [a, b, viaProxy] = await Promise.all([
    startTestServer(spawned, env),
    startTestServer(spawned, env),
    startTestServer(spawned, { ...env, KEYWARD_REDIS_URL: `redis://127.0.0.1:${proxy.port}` }),
  ]);
  key = (await makeApiKey(["claims:write"])).key;
  source = await makeSource();
});

afterAll(async () => {
  await Promise.all(spawned.map((s) => stopServer(s)));
  await proxy?.close();
  await stopRedisServer();
});

describe("Redis first line", () => {
  it("answers a duplicate without PostgreSQL, counts it, and the key's duplicate count catches up", async () => {
    const eventId = uniq("dup");
    expect((await claim(a, { eventId })).status).toBe(201);
    await untilRedisHit(b, eventId);
    const before = await redisStats(b);
    const r = await claim(b, { eventId });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ outcome: "duplicate", source, eventId, status: "done" });
    expect((await redisStats(b)).hit).toBe(before.hit + 1);
    // The duplicates answered from Redis reach the key within a flush (5 s).
    const duplicateCount = async () =>
      (await sql<{ duplicate_count: number }>("SELECT duplicate_count FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId]))[0].duplicate_count;
    await expect.poll(duplicateCount, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(2);
  });

  it("never answers for the attempt that made the key (a repeat), nor for a payload mismatch", async () => {
    const eventId = uniq("att");
    const attemptId = `att-${uniq("x")}`;
    const payloadHash = "a".repeat(64);
    const first = await claim(a, { eventId, attemptId, payloadHash });
    expect(first.status).toBe(201);
    await untilRedisHit(b, eventId);
    const repeat = await claim(b, { eventId, attemptId, payloadHash });
    expect(repeat.status).toBe(201);
    expect(repeat.body).toMatchObject({ outcome: "claimed", repeat: true, claimToken: first.body.claimToken });
    const mismatch = await claim(b, { eventId, payloadHash: "b".repeat(64) });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.outcome).toBe("payload_mismatch");
    expect((await claim(b, { eventId, attemptId: "another", payloadHash })).status).toBe(200);
  });

  it("a key released on one server is not answered duplicate by the other: release, then reclaim → claimed", async () => {
    for (let round = 0; round < 3; round++) {
      const eventId = uniq("rel");
      const first = await claim(a, { eventId });
      expect(first.status).toBe(201);
      await untilRedisHit(b, eventId); // b answers it from Redis now
      const released = await call(a.baseUrl, "POST", "/api/v1/claims/release", {
        key,
        body: { source, eventId, claimToken: first.body.claimToken },
      });
      expect(released.status).toBe(200);
      const again = await claim(b, { eventId });
      expect(again.status).toBe(201);
      expect(again.body.outcome).toBe("claimed");
    }
    // The releases left tombstones (members of their buckets' meta keys): a late write of a released key's
    // entry is refused while they live.
    expect(await tombstones(source)).toBeGreaterThan(0);
  });

  it("a duplicate Redis answers still lands in its source's duplicate-age histogram, aged on the database's clock", async () => {
    const own = await makeSource();
    const claimOn = (server: TestServer, eventId: string) =>
      call(server.baseUrl, "POST", "/api/v1/claims", { key, body: { source: own, eventType: "t", eventId } });
    const eventId = uniq("aged");
    expect((await claimOn(a, eventId)).status).toBe(201);
    const duplicates = await untilRedisAnswers(b, () => claimOn(b, eventId));
    // Every duplicate (PostgreSQL's answers and Redis's) has an age, under 10 s here; they reach the table
    // with the outcome counters' flush (5 s).
    const histogram = async () =>
      (await sql<{ counts: number[] }>("SELECT counts FROM duplicate_ages WHERE source = $1", [own])).flatMap((r) => r.counts);
    await vi.waitFor(async () => expect((await histogram()).reduce((n, c) => n + c, 0)).toBe(duplicates), { timeout: 15_000, interval: 250 });
    const counts = await histogram();
    expect(counts.length % 15).toBe(0);
    const older = counts.filter((c, i) => i % 15 >= 2).reduce((n, c) => n + c, 0);
    expect(older).toBe(0);
  });

  it("asks Redis only while a source's claims are often duplicates: first claims skip it (no lookup, no entry), a storm turns it back on", async () => {
    const quiet = await makeSource();
    const claimOf = (eventId: string) => call(a.baseUrl, "POST", "/api/v1/claims", { key, body: { source: quiet, eventType: "t", eventId } });
    const before = await redisStats(a);
    const firsts = Array.from({ length: 60 }, (_, i) => `first-${String(i).padStart(2, "0")}`);
    for (const id of firsts) expect((await claimOf(id)).status).toBe(201);
    const after = await redisStats(a);
    // A source starts at a 1/2 share of duplicates; each first claim moves it 1/32 of the way to 0, and
    // below 1/5 (after 29 first claims) Redis is not asked. Other tests' servers are b and viaProxy.
    expect((after.skipped ?? 0) - (before.skipped ?? 0)).toBeGreaterThanOrEqual(30);
    expect((after.miss ?? 0) - (before.miss ?? 0)).toBeLessThanOrEqual(30);
    // A key PostgreSQL answers `duplicate` is remembered even while Redis is skipped: its sender is retrying it.
    // (Its entry is sent again with each duplicate until one lands: the first write to a bucket whose
    // generation this server has not learned yet writes nothing.)
    const late = firsts[59];
    const answers: number[] = [];
    await vi.waitFor(
      async () => {
        if ((await entriesOf(quiet)).includes(late)) return;
        answers.push((await claimOf(late)).status);
        throw new Error(`no entry for ${late} yet`);
      },
      { timeout: 5_000, interval: 50 },
    );
    expect(answers.filter((s) => s !== 200)).toEqual([]);
    // Nor are the keys the first claims made remembered: only the first ones, claimed while the share was ≥ 1/5.
    // This server sends its entry writes in order on one connection, so with `late`'s entry in Redis every
    // earlier write has run (or failed): the set below is final.
    const remembered = (await entriesOf(quiet)).filter((id) => id !== late);
    expect(remembered.length).toBeGreaterThan(0);
    // (a bucket whose generation this server has not learned yet writes nothing: some of those may be missing)
    for (const id of remembered) expect(firsts.indexOf(id), id).toBeLessThan(29);
    // Duplicates (answered by PostgreSQL while Redis is skipped) raise the share until Redis is asked again.
    const eventId = uniq("storm");
    expect((await claimOf(eventId)).status).toBe(201);
    await untilRedisAnswers(a, () => claimOf(eventId));
  });

  it("keyward redis forget: a key deleted by hand in SQL is claimed again, by its id or by a namespace move", async () => {
    const cli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        const env = { ...process.env, KEYWARD_REDIS_URL: `redis://127.0.0.1:${redisPort}` };
        execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env, timeout: 60_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? 1 : 0, stdout, stderr }),
        );
      });
    const [byId, all] = [uniq("forget"), uniq("forget-all")];
    for (const eventId of [byId, all]) {
      expect((await claim(a, { eventId })).status).toBe(201);
      await untilRedisHit(b, eventId);
      await sql("DELETE FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId]); // by hand
      // Redis still answers it: what the command is for.
      expect((await claim(b, { eventId })).status).toBe(200);
    }
    const one = await cli("redis", "forget", source, byId);
    expect(one, one.stderr).toMatchObject({ code: 0 });
    expect(one.stdout).toContain(`forgot 1 key of ${source} in Redis`);
    expect((await claim(b, { eventId: byId })).status).toBe(201);
    expect((await claim(b, { eventId: all })).status).toBe(200); // not named: still answered
    const every = await cli("redis", "forget", source);
    expect(every, every.stderr).toMatchObject({ code: 0 });
    expect(every.stdout).toContain("new Redis namespace");
    expect((await claim(b, { eventId: all })).status).toBe(201);
  });

  it("Redis stopped: claims stay correct (first 201, then 200), releases still take effect; Redis is used again when back", async () => {
    await stopRedisServer();
    const eventId = uniq("down");
    const first = await claim(a, { eventId });
    expect(first.status).toBe(201);
    expect((await claim(b, { eventId })).status).toBe(200);
    const released = await call(b.baseUrl, "POST", "/api/v1/claims/release", { key, body: { source, eventId, claimToken: first.body.claimToken } });
    expect(released.status).toBe(200);
    expect((await claim(a, { eventId })).status).toBe(201);

    await startRedisServer();
    const later = uniq("back");
    expect((await claim(a, { eventId: later })).status).toBe(201);
    await untilRedisHit(b, later);
  });

  it("Redis black-holed behind a TCP proxy: every claim is answered correctly within the bound, through PostgreSQL", async () => {
    const eventId = uniq("hole");
    expect((await claim(viaProxy, { eventId })).status).toBe(201);
    await untilRedisHit(viaProxy, eventId);
    proxy.setMode("blackhole");
    try {
      const before = await redisStats(viaProxy);
      for (let i = 0; i < 10; i++) {
        const fresh = uniq("hole-new");
        const t0 = performance.now();
        expect((await claim(viaProxy, { eventId: fresh })).status).toBe(201);
        expect((await claim(viaProxy, { eventId: fresh })).status).toBe(200);
        expect((await claim(viaProxy, { eventId })).status).toBe(200);
        // A bound, not a speed: Redis's 50 ms timeout plus the database, far under the statement timeout.
        expect(performance.now() - t0).toBeLessThan(5000);
      }
      expect((await redisStats(viaProxy)).error).toBeGreaterThan(before.error ?? 0);
    } finally {
      proxy.setMode("forward");
    }
  });
});
