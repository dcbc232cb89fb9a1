/**
 * Behind PgBouncer, several servers (issue 11, section 5): Debian's pgbouncer (1.18) in TRANSACTION
 * pooling mode with 4 server connections (test/setup/pgbouncer.ts) in front of this file's own database,
 * and two real `keyward start` processes through it, configured as docs/reliability.md says
 * (KEYWARD_DB_PREPARED_STATEMENTS=off, KEYWARD_MIGRATE_DATABASE_URL direct, statement_timeout on the
 * database). Every transaction of every client may land on any of the 4 server sessions, so anything
 * Keyward kept in a session (a session advisory lock, a named prepared statement) would show here.
 *
 * Proved: claims split across both servers are exactly once; pruning runs never overlap, whoever starts
 * them (both schedules every second, manual runs on both servers); one metrics sample per minute; every
 * replay item delivered once with both servers' executors running; statement timeouts still apply;
 * migrations leave no lock behind. And, as a control that the setup really multiplexes, named prepared
 * statements through it fail.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { cacheTrusted, keepListenerAwake, startApiKeyListener } from "@/lib/auth/api-key-cache";
import { closeDb, pool } from "@/lib/db/client";
import { migrate } from "@/lib/db/migrate";
import { checkDatabaseSession, MIGRATOR_LOCK_KEY } from "@/lib/db/session-check";
import { forgetNamedStatementsSetting } from "@/lib/db/sql";
import { takeSample } from "@/lib/metrics/sampler";
import { call } from "@/test/setup/auth";
import { makeSource, sql, uniq, fileDatabaseUrl } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { insertKeys } from "@/test/setup/keys";
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from "@/test/setup/pgbouncer";
import { startReceiver, type Receiver } from "@/test/setup/receiver";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";
import { baseEnv, reservePort, startKeyward, stopServer, type Server } from "@/test/setup/server";
import type { Json } from "@/test/setup/json";

vi.setConfig({ testTimeout: 90_000 });

if (!pgbouncerInstalled()) throw new Error("pgbouncer is not installed: `apt-get install -y pgbouncer` (.ci/run does this)");

const STATEMENT_TIMEOUT_MS = 2000;

let bouncer: PgBouncer;
const spawned: Server[] = [];
const receivers: Receiver[] = [];
const servers: { baseUrl: string; server: Server }[] = [];
let claimsKey: string;
let operatorKey: string;

const directUrl = () => fileDatabaseUrl();
const dbName = () => new URL(fileDatabaseUrl()).pathname.slice(1);

/** A query on a direct connection to this file's database (not through PgBouncer). */
async function direct<Row extends object>(text: string, values: unknown[] = []): Promise<Row[]> {
  const c = new pg.Client({ connectionString: directUrl() });
  await c.connect();
  try {
    return (await c.query<Row>(text, values)).rows;
  } finally {
    await c.end();
  }
}

/** This process's library calls go through PgBouncer too, with named statements as given. */
async function useThisProcessThrough(url: string, preparedStatements: "on" | "off"): Promise<void> {
  await closeDb();
  process.env.DATABASE_URL = url;
  process.env.KEYWARD_DB_PREPARED_STATEMENTS = preparedStatements;
  forgetNamedStatementsSetting();
}

const migratorLocks = async () =>
  (
    await direct<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks
       WHERE locktype = 'advisory' AND objid = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [MIGRATOR_LOCK_KEY], // Prisma's migrator takes it on its session and never gives it back itself
    )
  )[0].n;

beforeAll(async () => {
  // The operator's part behind PgBouncer: the statement timeout on the database (or role), since the
  // startup parameter Keyward's pool sends is dropped by the pooler.
  await direct(`ALTER DATABASE "${dbName()}" SET statement_timeout = '${STATEMENT_TIMEOUT_MS}ms'`);
  bouncer = await startPgBouncer({ serverUrl: directUrl(), poolSize: 4 });
  await useThisProcessThrough(bouncer.through(directUrl()), "off");

  const env = (port: number) =>
    Object.assign(baseEnv(), {
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      DATABASE_URL: bouncer.through(directUrl()),
      KEYWARD_MIGRATE_DATABASE_URL: directUrl(),
      KEYWARD_DB_PREPARED_STATEMENTS: "off",
      KEYWARD_DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      KEYWARD_REPLAY_WORKER: "1",
      KEYWARD_REPLAY_POLL_MS: "100",
      // Both schedules try to prune every second: runs from both servers meet all the time.
      KEYWARD_PRUNE_INTERVAL_SECONDS: "1",
      KEYWARD_PRUNE_BATCH_SIZE: "300",
      KEYWARD_PRUNE_PAUSE_MS: "5",
      KEYWARD_SAMPLE_INTERVAL_SECONDS: "60",
    });
  const ports = [await reservePort(), await reservePort()];
  const started = await Promise.all(ports.map((port) => startKeyward(env(port), spawned)));
  started.forEach((server, i) => servers.push({ server, baseUrl: `http://127.0.0.1:${ports[i]}` }));
  claimsKey = (await makeApiKey(["claims:write"])).key;
  operatorKey = (await makeApiKey(["operator"])).key;
}, 180_000);

afterAll(async () => {
  for (const r of receivers) await r.stop().catch(() => {});
  for (const s of spawned) await stopServer(s);
  await closeDb();
  await bouncer?.stop();
  // The file's database is dropped by setup-file.ts's afterAll, which runs after this one.
}, 60_000);

/** Runs `tasks` with at most `limit` in flight; resolves with their results in order. */
async function inParallel<T>(limit: number, tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]();
      }
    }),
  );
  return results;
}

const shuffle = <T>(xs: T[]): T[] => {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
};

describe("deployment behind PgBouncer (transaction pooling, 4 server connections)", () => {
  it("both servers started through it: migrations went straight to PostgreSQL and left no lock; the database's statement_timeout is the configured one", async () => {
    for (const { server } of servers) {
      const out = server.output();
      expect(out).toContain("(KEYWARD_MIGRATE_DATABASE_URL)");
      expect(out).not.toContain("warning: statement_timeout");
      expect(out).not.toContain("the migrator's session lock");
    }
    expect(await migratorLocks()).toBe(0);
    const pools = (await bouncer.admin<{ database: string; pool_mode: string }>("SHOW POOLS")).filter((r) => r.database === dbName());
    expect(pools.map((p) => p.pool_mode)).toEqual(["transaction"]);
  });

  it("a statement through PgBouncer is still cancelled at the statement timeout", async () => {
    const started = performance.now();
    const err = await pool()
      .query("SELECT pg_sleep(10)")
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("57014");
    expect(performance.now() - started).toBeLessThan(STATEMENT_TIMEOUT_MS + 3000);
  });

  it("start-up's session check: a pooler refusing the startup parameter names the fix; a dropped one and a migration through the pooler are warnings", async () => {
    // A PgBouncer as installed, without ignore_startup_parameters for statement_timeout.
    const strict = await startPgBouncer({ serverUrl: directUrl(), poolSize: 2, settings: { ignore_startup_parameters: "extra_float_digits" } });
    try {
      await useThisProcessThrough(strict.through(directUrl()), "off");
      await expect(checkDatabaseSession()).rejects.toThrow(/refuses the startup parameter statement_timeout: add `ignore_startup_parameters = statement_timeout`/);
    } finally {
      await strict.stop();
    }

    // Why migrations go around the pooler: through it, the migrator's session lock stays behind on a
    // pooled server session after the migrator has finished (a later migration would wait for it), and
    // start-up's check says so. An up-to-date database is not migrated at all (migrate() reads
    // _prisma_migrations and never starts the engine), so here the lock is taken the way the engine takes
    // it, on a pooled session, and the check must find it.
    const another = await startPgBouncer({ serverUrl: directUrl(), poolSize: 2 });
    try {
      expect(await migrate(another.through(directUrl()))).toEqual([]);
      expect(await migratorLocks()).toBe(0); // nothing to apply: no engine, no lock left behind
      const pooled = new pg.Client({ connectionString: another.through(directUrl()) });
      await pooled.connect();
      await pooled.query("SELECT pg_advisory_lock($1)", [MIGRATOR_LOCK_KEY]);
      await pooled.end(); // the client leaves; the pooled server session keeps the lock
      expect(await migratorLocks()).toBe(1);
      await useThisProcessThrough(another.through(directUrl()), "off");
      const warnings = await checkDatabaseSession();
      expect(warnings.join("\n")).toMatch(/the migrator's session lock .* is still held by an idle database session after migrating: .* Set KEYWARD_MIGRATE_DATABASE_URL/);
    } finally {
      await closeDb();
      await another.stop();
    }
    // Its server sessions are closed: the lock went with them.
    await vi.waitFor(async () => expect(await migratorLocks()).toBe(0), { timeout: 5000 });
    await useThisProcessThrough(bouncer.through(directUrl()), "off");
    const previous = process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;
    process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = "4000";
    try {
      const warnings = await checkDatabaseSession();
      expect(warnings).toHaveLength(1); // the timeout; no migrator lock is left (the servers migrated directly)
      expect(warnings[0]).toMatch(/statement_timeout on the database sessions is 2000 ms, not KEYWARD_DB_STATEMENT_TIMEOUT_MS=4000/);
      expect(warnings[0]).toContain("ALTER ROLE <user> SET statement_timeout = '4000ms'");
    } finally {
      if (previous === undefined) delete process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;
      else process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = previous;
    }
  });

  it("control: the setup multiplexes, so named prepared statements through it fail (why KEYWARD_DB_PREPARED_STATEMENTS=off)", async () => {
    const source = await makeSource();
    await useThisProcessThrough(bouncer.through(directUrl()), "on");
    try {
      const settled = await Promise.allSettled(
        Array.from({ length: 100 }, (_, i) => claimEvent({ source, eventId: `named-${i}`, eventType: "t" })),
      );
      const failures = settled.filter((s) => s.status === "rejected").map((s) => String((s as PromiseRejectedResult).reason));
      expect(failures.length).toBeGreaterThan(0);
      expect(failures.join("\n")).toMatch(/prepared statement "keyward_claim(_one)?" (does not exist|already exists)/);
    } finally {
      await useThisProcessThrough(bouncer.through(directUrl()), "off");
    }
  });

  it("the API-key cache's listener through PgBouncer never trusts itself (LISTEN needs a direct connection); directly it does", async () => {
    const logs: string[] = [];
    const through = startApiKeyListener({
      url: bouncer.through(directUrl()),
      crossSession: (text, values) => pool().query(text, values),
      log: (m) => logs.push(m),
      connectTimeoutMs: 3000,
      cacheKeys: true,
    });
    try {
      // Never trusted (every key is read from the database), from its start until it has told that it is
      // behind a pooler: a backend that changed between pings, or no notification from another session.
      let trustedOnce = false;
      await vi.waitFor(
        () => {
          keepListenerAwake();
          trustedOnce ||= cacheTrusted();
          expect(logs.join("\n")).toContain("API-key cache off: its listener does not receive notifications from other sessions");
        },
        { timeout: 30_000, interval: 50 },
      );
      expect(trustedOnce).toBe(false);
      expect(cacheTrusted()).toBe(false);
    } finally {
      await through.stop();
    }
    const direct = startApiKeyListener({
      url: directUrl(),
      crossSession: (text, values) => pool().query(text, values),
      log: (m) => logs.push(m),
      connectTimeoutMs: 3000,
      cacheKeys: true,
    });
    try {
      // The control: the same listener on a direct connection comes to trust itself.
      await vi.waitFor(
        () => {
          keepListenerAwake();
          expect(cacheTrusted()).toBe(true);
        },
        { timeout: 10_000, interval: 50 },
      );
    } finally {
      await direct.stop();
    }
  });

  it("concurrent claims split across both servers: exactly one `claimed` per event, no 5xx", async () => {
    const source = await makeSource();
    const ids = Array.from({ length: 300 }, (_, i) => `evt-${i}`);
    // Each event three times: on server A, on server B, and once more on either; in random order, 32 at once.
    const singles = shuffle(ids.flatMap((id, i) => [0, 1, i % 2].map((s) => ({ id, s }))));
    const batchIds = Array.from({ length: 200 }, (_, i) => `batch-${i}`);
    // Batches of 50 drawn from 200 events, each event in three batches, alternating servers.
    const batches = shuffle([...batchIds, ...batchIds, ...batchIds]).reduce<string[][]>((acc, id, i) => {
      if (i % 50 === 0) acc.push([]);
      const b = acc[acc.length - 1];
      if (!b.includes(id)) b.push(id);
      return acc;
    }, []);

    const statuses: number[] = [];
    const outcomes = new Map<string, string[]>();
    const note = (id: string, outcome: string) => outcomes.set(id, [...(outcomes.get(id) ?? []), outcome]);
    await inParallel(32, [
      ...singles.map(({ id, s }) => async () => {
        const r = await call(servers[s].baseUrl, "POST", "/api/v1/claims", { key: claimsKey, body: { source, eventId: id, eventType: "t" } });
        statuses.push(r.status);
        note(id, r.body?.outcome ?? `status ${r.status}`);
      }),
      ...batches.map((events, i) => async () => {
        const r = await call(servers[i % 2].baseUrl, "POST", "/api/v1/claims/batch", {
          key: claimsKey,
          body: { source, events: events.map((eventId) => ({ eventId, eventType: "t" })) },
        });
        statuses.push(r.status);
        if (r.status !== 200) return;
        for (const item of r.body.results as { eventId: string; outcome: string }[]) note(item.eventId, item.outcome);
      }),
    ]);

    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    for (const id of [...ids, ...batchIds]) {
      const o = outcomes.get(id) ?? [];
      expect(o.filter((x) => x === "claimed"), `${id}: ${o.join(",")}`).toHaveLength(1);
      expect(o.filter((x) => x !== "claimed" && x !== "duplicate"), id).toEqual([]);
    }
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n).toBe(ids.length + batchIds.length);

    // Both servers' pools (up to 10 connections each) shared PgBouncer's 4 server sessions.
    const clients = (await bouncer.admin<{ database: string }>("SHOW CLIENTS")).filter((c) => c.database === dbName());
    const serverSessions = (await bouncer.admin<{ database: string }>("SHOW SERVERS")).filter((c) => c.database === dbName());
    expect(serverSessions.length).toBeLessThanOrEqual(4);
    expect(clients.length).toBeGreaterThan(serverSessions.length);
  });

  it("one pruning run at a time across both servers: scheduled and manual runs never overlap", async () => {
    const source = await makeSource();
    await insertKeys(source, 30_000, "now() - interval '1 hour' + i * interval '1 ms'");
    await insertKeys(source, 50, "now() + interval '1 hour'", "live");

    // While both schedules try every second, manual runs on both servers at once, a round at most every
    // 100 ms, until the backlog is gone and some manual run both got the lease and was refused it.
    const manual: { status: number; body: Json }[] = [];
    const expired = async () =>
      (await sql<{ n: number }>("SELECT count(*)::int AS n FROM dedup_keys WHERE source = $1 AND expires_at < now()", [source]))[0].n;
    await vi.waitFor(
      async () => {
        manual.push(
          ...(await Promise.all(
            servers.map(({ baseUrl }) => call(baseUrl, "POST", "/api/v1/maintenance/prune", { key: operatorKey, body: { batchSize: 300, pauseMs: 5 } })),
          )),
        );
        expect(manual.some((m) => "run" in (m.body ?? {})), "a manual run got the lease").toBe(true);
        expect(manual.some((m) => "skipped" in (m.body ?? {})), "a manual run was refused it").toBe(true);
        expect(await expired(), "expired keys left").toBe(0);
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(manual.map((m) => m.status)).toEqual(manual.map(() => 200));
    expect(manual.filter((m) => "skipped" in m.body).length).toBeGreaterThan(0);
    expect(manual.filter((m) => "run" in m.body).length).toBeGreaterThan(0);
    expect(await expired()).toBe(0);
    const [{ live }] = await sql<{ live: number }>("SELECT count(*)::int AS live FROM dedup_keys WHERE source = $1", [source]);
    expect(live).toBe(50);

    const runs = await direct<{ id: string; started_at: Date; finished_at: Date | null; trigger: string; rows: number; stopped: string | null }>(
      "SELECT id, started_at, finished_at, trigger, rows, stopped FROM prune_runs ORDER BY started_at, id",
    );
    expect(runs.filter((r) => r.trigger === "schedule").length).toBeGreaterThan(0);
    expect(runs.filter((r) => r.trigger === "api").length).toBeGreaterThan(0);
    expect(runs.reduce((n, r) => n + Number(r.rows), 0)).toBe(30_000);
    expect(runs.filter((r) => r.stopped === "error")).toEqual([]);
    for (let i = 1; i < runs.length; i++) {
      const before = runs[i - 1];
      // Only the newest run may still be going; every other one ended before the next began.
      expect(before.finished_at, `run ${before.id} unfinished while run ${runs[i].id} started`).not.toBeNull();
      expect(runs[i].started_at.getTime(), `run ${runs[i].id} started before run ${before.id} ended`).toBeGreaterThanOrEqual(
        before.finished_at!.getTime(),
      );
    }
  });

  it("one metrics sample per minute: of eight instances sampling a minute at once, one writes it", async () => {
    const base = (await sql<{ m: Date }>("SELECT date_trunc('minute', now()) - interval '10 minutes' AS m"))[0].m;
    const minutes = [0, 1, 2].map((k) => new Date(base.getTime() - k * 60_000));
    for (const at of minutes) {
      // As the instances' schedules do: all aim at the same minute at the same moment.
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => takeSample({ at })));
      expect(outcomes.filter((o) => o.outcome === "written"), JSON.stringify(outcomes)).toHaveLength(1);
      expect(outcomes.every((o) => o.at.getTime() === at.getTime())).toBe(true);
      // Late instances find the minute taken.
      expect((await takeSample({ at })).outcome).toBe("exists");
    }
    const rows = await sql<{ at: Date }>("SELECT at FROM metric_samples WHERE at = ANY($1::timestamptz[])", [minutes]);
    expect(rows).toHaveLength(3);
  });

  it("every replay item delivered once while both servers run the replay executor", async () => {
    // Six replays of 15 items at 10 items/s: each takes over a second and a worker drives at most four at a
    // time, so both servers' executors drive some of them.
    const setups = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const source = await makeSource();
        const receiver = await startReceiver({ keywardUrl: servers[i % 2].baseUrl, apiKey: claimsKey, source });
        receivers.push(receiver);
        receiver.setSecret(await readyForReplay(source, receiver.url));
        const events = Array.from({ length: 15 }, () => uniq("evt"));
        await seedDeadLetters(source, events);
        return { source, receiver, events };
      }),
    );
    const replayIds = await Promise.all(
      setups.map(async ({ source }, i) => {
        const base = servers[i % 2].baseUrl;
        const pf = await call(base, "POST", "/api/v1/replays/preflight", { key: operatorKey, body: { source } });
        expect(pf.status, pf.text).toBe(201);
        expect(pf.body.counts).toMatchObject({ never_processed: 15, total: 15 });
        const started = await call(base, "POST", "/api/v1/replays", {
          key: operatorKey,
          headers: { "idempotency-key": uniq("idem") },
          body: { preflightId: pf.body.preflightId, include: ["never_processed"], ratePerSecond: 10, concurrency: 2 },
        });
        expect(started.status, started.text).toBe(202);
        return started.body.replayId as string;
      }),
    );

    const workers = new Set<string>();
    await vi.waitFor(
      async () => {
        for (const r of await sql<{ worker: string }>("SELECT DISTINCT worker FROM replays WHERE id = ANY($1::uuid[]) AND worker IS NOT NULL", [replayIds])) {
          workers.add(r.worker);
        }
        const done = await sql<{ status: string }>("SELECT status FROM replays WHERE id = ANY($1::uuid[])", [replayIds]);
        expect(done.map((d) => d.status)).toEqual(replayIds.map(() => "completed"));
      },
      { timeout: 60_000, interval: 100 },
    );
    expect(workers.size).toBeGreaterThanOrEqual(2);

    for (const id of replayIds) {
      const r = await call(servers[0].baseUrl, "GET", `/api/v1/replays/${id}`, { key: operatorKey });
      expect(r.status).toBe(200);
      expect(r.body.counts).toMatchObject({ delivered: 15, failed: 0, pending: 0, delivering: 0 });
    }
    for (const { receiver, events } of setups) {
      const c = receiver.snapshot();
      expect(c.requests).toBe(15); // each item sent once
      expect(c).toMatchObject({ badSignatures: 0, duplicates: 0, claimErrors: 0, inFlight: 0 });
      for (const e of events) expect(receiver.timesProcessed(e), e).toBe(1);
    }
  });

  it("neither server logged a database error", () => {
    for (const { server } of servers) {
      const out = server.output();
      expect(out).not.toMatch(/prepared statement|advisory|pruning failed|sample failed|fast route failed|replay worker/i);
    }
  });
});
