/**
 * KEYWARD_READ_DATABASE_URL (lib/db/read.ts) against a real streaming replica: a private primary and a
 * `pg_basebackup -R` standby of it (test/setup/pg-replica.ts), the replica reached through a TCP proxy this
 * file controls. Audit search is served by the replica while the primary takes claims (with the replica's WAL
 * replay paused, a claim the primary has is not found yet; resumed, it is); a replica that refuses or is
 * black-holed makes reads fall back to the primary (one failed attempt, then straight to the primary for
 * KEYWARD_READ_RETRY_SECONDS), and reads return to the replica once it answers again.
 */
import { z } from "zod";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { searchAudit } from "@/lib/audit/search";
import { auditSearchQuery } from "@/lib/audit/schema";
import { claimEvent } from "@/lib/claims/claim";
import { closeDb } from "@/lib/db/client";
import { migrate } from "@/lib/db/migrate";
import { readQuery, readStatus, resetReadStatus } from "@/lib/db/read";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { startPrimaryAndReplica, type PrimaryAndReplica } from "@/test/setup/pg-replica";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";
import { timePasses } from "@/test/setup/time";

const ENV = [
  "DATABASE_URL",
  "KEYWARD_READ_DATABASE_URL",
  "KEYWARD_READ_RETRY_SECONDS",
  "KEYWARD_DB_CONNECT_TIMEOUT_MS",
  "KEYWARD_DB_STATEMENT_TIMEOUT_MS",
] as const;
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));

let servers: PrimaryAndReplica;
let proxy: TcpProxy;
let replicaAdmin: pg.Client;

beforeAll(async () => {
  servers = await startPrimaryAndReplica();
  const admin = new pg.Client({ connectionString: servers.primary.url() });
  await admin.connect();
  await admin.query("CREATE DATABASE keyward");
  await admin.end();
  await migrate(servers.primary.url("keyward"));
  replicaAdmin = new pg.Client({ connectionString: servers.replica.url("keyward") });
  // The migrated schema reaches the replica by streaming (the database itself first, so a connection may fail).
  await vi.waitFor(
    async () => {
      const c = new pg.Client({ connectionString: servers.replica.url("keyward") });
      try {
        await c.connect();
        const { rows } = await c.query<{ ok: boolean }>("SELECT to_regclass('public.audit_events') IS NOT NULL AS ok");
        expect(rows[0].ok, "the replica has the migrated schema").toBe(true);
      } finally {
        await c.end().catch(() => {});
      }
    },
    { timeout: 30_000, interval: 200 },
  );
  await replicaAdmin.connect();
  proxy = await startTcpProxy({ host: "127.0.0.1", port: servers.replica.port });
  await closeDb();
  process.env.DATABASE_URL = servers.primary.url("keyward");
  process.env.KEYWARD_READ_DATABASE_URL = proxy.url(servers.replica.url("keyward"));
  process.env.KEYWARD_READ_RETRY_SECONDS = "1";
  process.env.KEYWARD_DB_CONNECT_TIMEOUT_MS = "1000";
  process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = "3000";
  resetReadStatus();
}, 120_000);

afterAll(async () => {
  await closeDb();
  for (const k of ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  resetReadStatus();
  await replicaAdmin?.end().catch(() => {});
  await proxy?.close();
  await servers?.close();
});

const search = async (source: string, eventId: string) => (await searchAudit(auditSearchQuery.parse({ source, eventId }))).items;
const onPrimary = async (source: string, eventId: string) =>
  (await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE source = $1 AND event_id = $2", [source, eventId]))[0].n;

/** With the replica's replay paused, a claim just made on the primary is missing from reads served by the replica. */
async function expectServedByReplica(source: string) {
  await replicaAdmin.query("SELECT pg_wal_replay_pause()");
  try {
    const eventId = uniq("paused");
    expect((await claimEvent({ source, eventId, eventType: "t" })).outcome).toBe("claimed");
    expect(await onPrimary(source, eventId)).toBe(1);
    expect(await search(source, eventId)).toHaveLength(0);
    expect(readStatus().target).toBe("replica");
    return eventId;
  } finally {
    await replicaAdmin.query("SELECT pg_wal_replay_resume()");
  }
}

describe("KEYWARD_READ_DATABASE_URL: audit search on a streaming replica", () => {
  it("serves audit search from the replica while the primary takes claims; what the replica has not replayed yet is not found", async () => {
    const source = await makeSource();
    let stop = false;
    const made: string[] = [];
    const claims = (async () => {
      while (!stop) {
        const eventId = uniq("bg");
        await claimEvent({ source, eventId, eventType: "t" });
        made.push(eventId);
      }
    })();
    try {
      const paused = await expectServedByReplica(source);
      // Replayed, it is there; so is every claim the primary took meanwhile, once the replica has replayed
      // the primary's WAL up to the moment they were all answered (claims go on: the newest may still lag).
      await expect.poll(async () => (await search(source, paused)).length, { timeout: 15_000, interval: 100 }).toBe(1);
      await expect.poll(() => made.length).toBeGreaterThan(0);
      const taken = made.slice();
      const [{ lsn }] = await sql<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn");
      const replayedUpTo = async () =>
        (await replicaAdmin.query<{ caught: boolean }>("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught", [lsn])).rows[0].caught;
      await expect.poll(replayedUpTo, { timeout: 15_000, interval: 100 }).toBe(true);
      for (let i = 0; i < 5; i++) expect(await search(source, taken[Math.floor(Math.random() * taken.length)])).toHaveLength(1);
    } finally {
      stop = true;
      await claims;
    }
    expect(made.length).toBeGreaterThan(0);
  }, 60_000);

  it("a replica that refuses connections: reads fall back to the primary at once, and return to the replica once it answers", async () => {
    const source = await makeSource();
    proxy.setMode("refuse");
    try {
      const eventId = uniq("down");
      await claimEvent({ source, eventId, eventType: "t" });
      expect(await search(source, eventId)).toHaveLength(1); // the primary's answer
      expect(readStatus().target).toBe("primary (replica unavailable)");
      expect(readStatus().failures).toBeGreaterThan(0);
    } finally {
      proxy.setMode("forward");
    }
    await timePasses(1100, "KEYWARD_READ_RETRY_SECONDS = 1: once it has passed, reads try the replica again");
    expect(readStatus().target).toBe("replica");
    await expectServedByReplica(source);
  }, 60_000);

  it("a black-holed replica: one read waits at most its timeouts before the primary answers; the next go straight to the primary", async () => {
    const source = await makeSource();
    resetReadStatus();
    expect(await search(source, uniq("warm"))).toHaveLength(0); // a pooled connection to the replica, open
    proxy.setMode("blackhole");
    try {
      const eventId = uniq("holed");
      await claimEvent({ source, eventId, eventType: "t" });
      const t0 = performance.now();
      expect(await search(source, eventId)).toHaveLength(1);
      // statement timeout 3 s + 0.5 s margin on the open connection (a new one: connect timeout 1 s), plus a loaded machine's slack
      expect(performance.now() - t0).toBeLessThan(8_000);
      expect(readStatus().target).toBe("primary (replica unavailable)");
      const opened = proxy.connections();
      for (let i = 0; i < 3; i++) expect(await search(source, eventId)).toHaveLength(1);
      expect(proxy.connections()).toBeLessThanOrEqual(opened); // no new attempt on the replica meanwhile (one would stay open, black-holed)
    } finally {
      proxy.setMode("forward");
    }
    await timePasses(1100, "KEYWARD_READ_RETRY_SECONDS = 1: once it has passed, reads try the replica again");
    await expectServedByReplica(source);
  }, 60_000);

  it("a statement the replica rejects is the caller's error, not a reason to fall back", async () => {
    resetReadStatus();
    await expect(readQuery(z.object({}), "SELECT no_such_column FROM audit_events")).rejects.toMatchObject({ code: "42703" });
    expect(readStatus()).toMatchObject({ target: "replica", failures: 0 });
  });
});
