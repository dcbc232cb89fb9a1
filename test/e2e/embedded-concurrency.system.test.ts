/**
 * The embedded database under ordinary concurrency, as a new user meets it: `keyward start` with no
 * DATABASE_URL (the embedded PostgreSQL in a temporary KEYWARD_DATA_DIR), a real server process, real
 * HTTP clients.
 *
 * - Single and batch claims from 8 and 32 concurrent clients racing for the same event ids: every answer
 *   is 2xx, and every event id is `claimed` exactly once (the rest `duplicate`).
 * - The CLI (source list, apikey create, user list, replay list, prune) while the server is under that
 *   load: every command exits 0.
 * - Pruning: the server's own schedule prunes expired keys and `keyward prune` runs beside it; no run
 *   fails, no two runs overlap.
 * - A replay end to end to a local receiver (which claims through the server): it completes, and the
 *   receiver processed every item exactly once.
 * - Other clients of the same server: one that logs in with the password and holds a transaction open (on
 *   a claimed key's row, even) does not stop claims on other keys; 150 connections that never send a
 *   startup packet do not stop the CLI or the claims.
 *
 * Served from the production build that the global setup keeps current, with --no-build.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, cookiesOf } from "@/test/setup/auth";
import { startReceiver, type Receiver } from "@/test/setup/receiver";
import { embeddedStatus } from "@/lib/db/embedded";
import { baseEnv, BIN, reservePort, ROOT, startKeyward, stopEmbeddedPostgres, stopServer, type Server } from "@/test/setup/server";

/** A first start creates the cluster and migrates: generous on the shared, loaded test machine. */
const EMBEDDED_START_MS = 180_000;
let dataDir: string;
let port: number;
let baseUrl: string;
let server: Server | undefined;
const spawned: Server[] = [];
let db: pg.Client;
let key: string;
let adminCookie: string;
const SOURCE = "emb-load";
let receiver: Receiver | undefined;

function childEnv(): NodeJS.ProcessEnv {
  return Object.assign(baseEnv(["DATABASE_URL"]), {
    KEYWARD_DATA_DIR: dataDir,
    PORT: String(port),
    HOSTNAME: "127.0.0.1",
    // Correctness, not latency, is tested here (connection bounds: test/db/faults.e2e.test.ts): on the shared
    // test machine (load 20+ on 2 cores) opening a connection in a busy process can exceed the 3 s default.
    KEYWARD_DB_CONNECT_TIMEOUT_MS: "20000",
    // This server owns its database: it prunes it on a (fast) schedule and runs the replay worker.
    KEYWARD_PRUNE_INTERVAL_SECONDS: "1",
    KEYWARD_REPLAY_WORKER: "1",
    KEYWARD_REPLAY_POLL_MS: "100",
  });
}

type Run = { code: number; stdout: string; stderr: string };

function keyward(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(), timeout: 240_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** Exit 0, and nothing on stderr but the commands' own notices ("created …", "Its password is shown once …"). */
function expectOk(r: Run, what: string): void {
  expect(r.stderr.replace(/^(created .*|Its password is shown once; store it now:)\n/gm, ""), what).toBe("");
  expect(r.code, `${what}: ${r.stderr}`).toBe(0);
}

/** `clients` workers share `work` items, each worker taking the next one until none is left. */
async function concurrently<T>(clients: number, work: T[], each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < work.length) await each(work[next++]);
    }),
  );
}

type Answer = { status: number; outcome?: string; eventId?: string; body: string };

async function post(pathname: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(baseUrl + pathname, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** Every client claims every id (in its own order): each id must be `claimed` once and `duplicate` for the rest. */
async function raceSingleClaims(clients: number, ids: string[]): Promise<Answer[]> {
  const answers: Answer[] = [];
  const work = Array.from({ length: clients }, (_, c) => ids.map((_, i) => ids[(i * 7 + c * 13) % ids.length])).flat();
  await concurrently(clients, work, async (eventId) => {
    const r = await post("/api/v1/claims", { source: SOURCE, eventId, eventType: "load.single" });
    const parsed = r.status < 300 ? (JSON.parse(r.text) as { outcome: string; eventId: string }) : undefined;
    answers.push({ status: r.status, outcome: parsed?.outcome, eventId: parsed?.eventId, body: r.text });
  });
  return answers;
}

/** Batches of `size` overlapping ids from every client. */
async function raceBatchClaims(clients: number, ids: string[], size: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  const batches: string[][] = [];
  for (let c = 0; c < clients; c++) {
    for (let start = (c * size) / 2; start < ids.length + size; start += size) {
      const batch = Array.from({ length: size }, (_, i) => ids[(start + i) % ids.length]);
      batches.push([...new Set(batch)]);
    }
  }
  await concurrently(clients, batches, async (batch) => {
    const r = await post("/api/v1/claims/batch", { source: SOURCE, events: batch.map((eventId) => ({ eventId, eventType: "load.batch" })) });
    if (r.status !== 200) return void answers.push({ status: r.status, body: r.text });
    for (const item of (JSON.parse(r.text) as { results: { outcome: string; eventId: string }[] }).results) {
      answers.push({ status: r.status, outcome: item.outcome, eventId: item.eventId, body: "" });
    }
  });
  return answers;
}

function expectExactlyOnce(answers: Answer[], ids: string[]): void {
  const failed = answers.filter((a) => a.status >= 300);
  expect(failed.slice(0, 3), `${failed.length} non-2xx answers`).toEqual([]);
  const claimed = new Map<string, number>();
  for (const a of answers) {
    expect(["claimed", "duplicate"]).toContain(a.outcome);
    if (a.outcome === "claimed") claimed.set(a.eventId!, (claimed.get(a.eventId!) ?? 0) + 1);
  }
  expect([...claimed.keys()].sort()).toEqual([...ids].sort());
  expect([...claimed.values()].every((n) => n === 1)).toBe(true);
}

const idsFor = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "keyward-emb-load-"));
  port = await reservePort();
  baseUrl = `http://127.0.0.1:${port}`;
  server = await startKeyward(childEnv(), spawned, EMBEDDED_START_MS);
  expect(server.output()).toContain("[keyward] database: embedded PostgreSQL 18 in");

  // The test's own look into the database, with the password from the data directory as the CLI connects.
  const { port: pgPort, password } = embeddedStatus(dataDir);
  db = new pg.Client({ connectionString: `postgresql://keyward:${password}@127.0.0.1:${pgPort}/keyward` });
  await db.connect();

  // Set-up through the CLI while the server runs, three commands at once.
  const [src, apikey, admin] = await Promise.all([
    keyward("source", "create", SOURCE, "--retry-window", "1d", "--queue-lag", "1d", "--clock-skew", "5m", "--replay", "1d"),
    keyward("apikey", "create", "--name", "load", "--scopes", "claims:write,claims:read,deadletters:write,operator"),
    keyward("user", "create", "root", "--role", "admin", "--generate-password"),
  ]);
  expectOk(src, "source create");
  expectOk(apikey, "apikey create");
  expectOk(admin, "user create");
  key = apikey.stdout.trim();
  const signedIn = await call(baseUrl, "POST", "/api/v1/session", { origin: baseUrl, body: { username: "root", password: admin.stdout.trim() } });
  expect(signedIn.status).toBe(200);
  adminCookie = cookiesOf(signedIn.headers);
}, 480_000);

afterAll(async () => {
  await receiver?.stop().catch(() => {});
  await db?.end().catch(() => {});
  for (const s of spawned) await stopServer(s);
  await stopEmbeddedPostgres(dataDir);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 30_000);

describe("the embedded database under concurrent load", () => {
  it("8 clients, single claims racing for the same 60 ids: all 2xx, each id claimed exactly once", async () => {
    const ids = idsFor("s8", 60);
    expectExactlyOnce(await raceSingleClaims(8, ids), ids);
  }, 120_000);

  it("32 clients, single claims racing for the same 40 ids, with the CLI working alongside: all 2xx, each claimed once", async () => {
    const ids = idsFor("s32", 40);
    const [answers, ...cli] = await Promise.all([
      raceSingleClaims(32, ids),
      keyward("source", "list"),
      keyward("apikey", "create", "--name", "during-load", "--scopes", "read"),
      keyward("user", "list"),
      keyward("replay", "list"),
    ]);
    expectExactlyOnce(answers, ids);
    const [sources, apikey, users, replays] = cli;
    expectOk(sources, "source list");
    expect(sources.stdout).toMatch(new RegExp(`^${SOURCE}\\s`, "m"));
    expectOk(apikey, "apikey create");
    expect(apikey.stdout.trim()).toMatch(/^kw_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/);
    expectOk(users, "user list");
    expect(users.stdout).toMatch(/^root\s+admin/m);
    expectOk(replays, "replay list");
  }, 180_000);

  it("8 and 32 clients, batch claims of overlapping ids: all 200, each id claimed exactly once", async () => {
    const ids8 = idsFor("b8", 200);
    expectExactlyOnce(await raceBatchClaims(8, ids8, 50), ids8);
    const ids32 = idsFor("b32", 320);
    expectExactlyOnce(await raceBatchClaims(32, ids32, 40), ids32);
  }, 180_000);

  it("prunes while serving: the schedule and `keyward prune` both work, never at once, never failing", async () => {
    // Expire some keys by the database clock; the schedule (every second) or the CLI deletes them.
    await db.query("UPDATE dedup_keys SET expires_at = now() - interval '1 hour' WHERE source = $1 AND event_id LIKE 's8-%'", [SOURCE]);
    const claimsDuring = raceSingleClaims(8, idsFor("p8", 30));
    let cli: Run | undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      cli = await keyward("prune", "--json");
      expectOk(cli, "prune");
      if ("run" in JSON.parse(cli.stdout)) break;
      expect(JSON.parse(cli.stdout)).toEqual({ skipped: "another prune is running" }); // the schedule's run at that instant
    }
    expect(JSON.parse(cli!.stdout).run).toMatchObject({ trigger: "cli", error: null });
    expectExactlyOnce(await claimsDuring, idsFor("p8", 30));

    const { rows: left } = await db.query("SELECT count(*)::int AS n FROM dedup_keys WHERE source = $1 AND event_id LIKE 's8-%'", [SOURCE]);
    expect(left[0].n).toBe(0);
    // The schedule ran too (every second since start), and no run of either kind failed or overlapped another.
    const { rows: runs } = await db.query<{ trigger: string; started_at: Date; finished_at: Date | null; stopped: string; error: string | null }>(
      "SELECT trigger, started_at, finished_at, stopped, error FROM prune_runs ORDER BY started_at",
    );
    expect(runs.filter((r) => r.trigger === "schedule").length).toBeGreaterThan(3);
    expect(runs.filter((r) => r.error !== null || r.stopped === "error")).toEqual([]);
    const finished = runs.filter((r) => r.finished_at !== null);
    for (let i = 1; i < finished.length; i++) {
      expect(finished[i].started_at.getTime()).toBeGreaterThanOrEqual(finished[i - 1].finished_at!.getTime());
    }
    expect(server!.output()).not.toMatch(/pruning failed|prepared statement/);
  }, 180_000);

  it("a replay of 37 dead letters runs to completed; the receiver processed each exactly once", async () => {
    receiver = await startReceiver({ keywardUrl: baseUrl, apiKey: key, source: SOURCE });
    const admin = { cookie: adminCookie, origin: baseUrl };
    expect((await call(baseUrl, "PATCH", `/api/v1/sources/${SOURCE}`, { ...admin, body: { replayDestination: receiver.url } })).status).toBe(200);
    const secret = await call(baseUrl, "POST", `/api/v1/sources/${SOURCE}/signing-secret`, admin);
    expect(secret.status).toBe(201);
    receiver.setSecret(secret.body.secret);

    const ids = idsFor("dl", 37);
    const intake = await call(baseUrl, "POST", "/api/v1/dead-letters/batch", {
      key,
      body: { items: ids.map((eventId, n) => ({ source: SOURCE, eventId, eventType: "order.paid", payload: { id: eventId, n }, error: "consumer crashed" })) },
    });
    expect(intake.status).toBe(200);
    expect(intake.body.results.filter((r: { id?: string }) => !r.id)).toEqual([]);

    const preflight = await call(baseUrl, "POST", "/api/v1/replays/preflight", { key, body: { source: SOURCE } });
    expect(preflight.status).toBe(201);
    expect(preflight.body.counts).toMatchObject({ never_processed: 37, total: 37 });
    const started = await call(baseUrl, "POST", "/api/v1/replays", {
      key,
      headers: { "idempotency-key": "emb-replay-1" },
      body: { preflightId: preflight.body.preflightId, include: ["never_processed"], concurrency: 4 },
    });
    expect(started.status).toBe(202);
    expect(started.body.total).toBe(37);

    // Claims keep coming while the replay runs.
    const claimsDuring = raceSingleClaims(8, idsFor("r8", 30));
    const replayNow = async () => (await call(baseUrl, "GET", `/api/v1/replays/${started.body.replayId}`, { key })).body;
    await expect.poll(async () => (await replayNow()).status, { timeout: 60_000, interval: 200 }).toBe("completed");
    const replay = await replayNow();
    expectExactlyOnce(await claimsDuring, idsFor("r8", 30));
    expect(replay.counts).toMatchObject({ delivered: 37, failed: 0, pending: 0, delivering: 0, skipped_unsafe: 0 });
    const counts = receiver.snapshot();
    expect(Object.keys(counts.processed).sort()).toEqual([...ids].sort());
    expect(Object.values(counts.processed).every((n) => n === 1)).toBe(true);
    expect(counts.claimErrors).toBe(0);

    const shown = await keyward("replay", "show", started.body.replayId);
    expectOk(shown, "replay show");
    expect(shown.stdout).toMatch(/completed/);
    expect(server!.output()).not.toMatch(/prepared statement|replay worker.*failed/i);
  }, 180_000);

  it("a foreign client holding a transaction open (on a claimed key's row) does not stop claims on other keys", async () => {
    const { port: pgPort, password } = embeddedStatus(dataDir);
    const foreign = new pg.Client({ connectionString: `postgresql://keyward:${password}@127.0.0.1:${pgPort}/keyward` });
    await foreign.connect();
    try {
      await foreign.query("BEGIN");
      await foreign.query("SELECT event_id FROM dedup_keys WHERE source = $1 AND event_id = 's32-0' FOR UPDATE", [SOURCE]);
      await foreign.query("SELECT 1");
      const ids = idsFor("held", 40);
      expectExactlyOnce(await raceSingleClaims(8, ids), ids);
      const batch = idsFor("held-b", 100);
      expectExactlyOnce(await raceBatchClaims(8, batch, 20), batch);
    } finally {
      await foreign.query("ROLLBACK").catch(() => {});
      await foreign.end();
    }
  }, 120_000);

  it("150 connections that never send a startup packet stop neither the CLI nor the claims", async () => {
    const { port: pgPort } = embeddedStatus(dataDir);
    const sockets = await Promise.all(
      Array.from({ length: 150 }, () => new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect({ host: "127.0.0.1", port: pgPort! });
        s.once("connect", () => resolve(s));
        s.once("error", reject);
      })),
    );
    try {
      const [listed, answers] = await Promise.all([keyward("source", "list"), raceSingleClaims(8, idsFor("halfopen", 40))]);
      expectOk(listed, "source list");
      expect(listed.stdout).toMatch(new RegExp(`^${SOURCE}\\s`, "m"));
      expectExactlyOnce(answers, idsFor("halfopen", 40));
    } finally {
      for (const s of sockets) s.destroy();
    }
  }, 120_000);
});
