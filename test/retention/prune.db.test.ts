/**
 * Pruning expired dedup keys (lib/retention/prune.ts) against a real PostgreSQL: only expired keys go
 * (by the database clock), in bounded batches, one pruner at a time, claims unharmed, the time budget
 * respected, every run recorded, the audit history untouched. Runs in a database of its own: a run
 * deletes every expired key, and other test files keep expired keys on purpose.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { PRUNE_LEASE, PRUNE_LEASE_SECONDS, pruneExpiredKeys, listPruneRuns } from "@/lib/retention/prune";
import { releaseLease, takeLease } from "@/lib/db/lease";
import { rowsPerSecond, type PruneOutcome, type PruneRunRecord } from "@/lib/retention/prune-schema";
import { claimEvent } from "@/lib/claims/claim";
import { closeDb } from "@/lib/db/client";
import { connectionDb } from "@/lib/db/transaction";
import { makeSource, sql, uniq, fileDatabaseUrl } from "@/test/setup/db";
import { countKeys, insertKeys } from "@/test/setup/keys";


function ran(outcome: PruneOutcome): PruneRunRecord {
  if (!("run" in outcome)) throw new Error(`expected a run, got ${JSON.stringify(outcome)}`);
  return outcome.run;
}

async function auditCount(): Promise<number> {
  const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM audit_events");
  return n;
}

async function runRow(id: string) {
  const [row] = await sql<Record<string, unknown>>("SELECT * FROM prune_runs WHERE id = $1", [id]);
  return row;
}

describe("pruneExpiredKeys", () => {
  it("deletes exactly the expired keys, by the database clock, and leaves the audit history alone", async () => {
    const source = await makeSource();
    // Keys with an audit history: claimed through the library, then expired by the database clock.
    const claimed = [uniq("a"), uniq("b")];
    for (const eventId of claimed) await claimEvent({ source, eventId, eventType: "t" });
    await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 minute' WHERE source = $1", [source]);
    await insertKeys(source, 50, "now() - interval '1 day'", "old");
    await insertKeys(source, 20, "now() + interval '1 day'", "live");
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, lease_expires_at, expires_at) VALUES
         ($1, 'just-expired', 't', 'done', gen_random_uuid(), 'claimed', NULL, now() - interval '1 millisecond'),
         ($1, 'about-to-expire', 't', 'done', gen_random_uuid(), 'claimed', NULL, now() + interval '2 seconds'),
         ($1, 'leased', 't', 'processing', gen_random_uuid(), 'claimed', now() + interval '1 hour', now() + interval '1 hour')`,
      [source],
    );
    const auditBefore = await auditCount();
    const [{ n: keyAudits }] = await sql<{ n: number }>("SELECT count(*) AS n FROM audit_events WHERE source = $1", [source]);
    expect(keyAudits).toBe(2);

    const run = ran(await pruneExpiredKeys({ trigger: "cli", actor: "test", pauseMs: 0 }));

    expect(run.rows).toBe(2 + 50 + 1);
    expect(run.stopped).toBe("drained");
    const left = await sql<{ event_id: string }>("SELECT event_id FROM dedup_keys WHERE source = $1 ORDER BY event_id", [source]);
    expect(left.map((r) => r.event_id)).toEqual(
      ["about-to-expire", "leased", ...Array.from({ length: 20 }, (_, i) => `live${i + 1}`)].sort(),
    );
    const [{ expired }] = await sql<{ expired: number }>("SELECT count(*) AS expired FROM dedup_keys WHERE expires_at < now()");
    expect(expired).toBe(0);
    // The audit history is never touched: the same rows, the claimed keys' history included.
    expect(await auditCount()).toBe(auditBefore);
    const [{ n: after }] = await sql<{ n: number }>("SELECT count(*) AS n FROM audit_events WHERE source = $1", [source]);
    expect(after).toBe(2);
    await sql("DELETE FROM dedup_keys WHERE source = $1", [source]); // the 2-second key would expire into later runs
  });

  it("works in bounded batches: 1000 expired keys at batch size 100 → 10 batches of at most 100, all recorded", async () => {
    const source = await makeSource();
    await insertKeys(source, 1000, "now() - interval '1 hour' + i * interval '1 ms'");
    await insertKeys(source, 10, "now() + interval '1 hour'", "live");
    const batches: number[] = [];

    const run = ran(await pruneExpiredKeys({ trigger: "api", actor: "user:test", batchSize: 100, pauseMs: 1, onBatch: (n) => batches.push(n) }));

    expect(batches.length).toBeGreaterThanOrEqual(10);
    expect(Math.max(...batches)).toBeLessThanOrEqual(100);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(1000);
    expect(run).toMatchObject({ batches: batches.length, rows: 1000, mode: "batch", trigger: "api", actor: "user:test", stopped: "drained", error: null });
    expect(await countKeys(source)).toBe(10);
    // The run row says the same, with its start and end by the database clock; rows/s derives from them.
    const row = await runRow(run.id);
    expect(row).toMatchObject({ mode: "batch", trigger: "api", actor: "user:test", batches: batches.length, rows: 1000, stopped: "drained", error: null });
    expect((row.finished_at as Date).getTime()).toBeGreaterThanOrEqual((row.started_at as Date).getTime());
    expect(run.durationMs).toBe((row.finished_at as Date).getTime() - (row.started_at as Date).getTime());
    expect(run.rowsPerSecond).toBe(rowsPerSecond(1000, run.durationMs));
    expect(run.rowsPerSecond).toBeGreaterThan(0);
    // The list answers the same record, newest first.
    const [latest] = await listPruneRuns(5);
    expect(latest).toEqual(run);
  });

  it("stops at its time budget with a backlog left, which the next run continues", async () => {
    const source = await makeSource();
    const backlog = 10_000;
    await insertKeys(source, backlog, "now() - interval '1 hour' + i * interval '1 ms'");

    const run = ran(await pruneExpiredKeys({ trigger: "cli", batchSize: 100, pauseMs: 5, budgetMs: 30 }));

    expect(run.stopped).toBe("time_budget");
    expect(run.rows).toBeGreaterThanOrEqual(100); // a run always does at least one batch
    expect(run.rows).toBeLessThan(backlog);
    expect(await countKeys(source)).toBe(backlog - run.rows);
    // Oldest expiry first: what is left is the newest-expired part.
    const [{ min }] = await sql<{ min: string }>("SELECT min(substr(event_id, 2)::int) AS min FROM dedup_keys WHERE source = $1", [source]);
    expect(Number(min)).toBe(run.rows + 1);

    const rest = ran(await pruneExpiredKeys({ trigger: "cli", pauseMs: 0 }));
    expect(rest.stopped).toBe("drained");
    expect(rest.rows).toBeGreaterThanOrEqual(backlog - run.rows);
    expect(await countKeys(source)).toBe(0);
  });

  it("an abort (server shutdown) ends the run after its current batch", async () => {
    const source = await makeSource();
    await insertKeys(source, 2000, "now() - interval '1 hour'");
    const abort = new AbortController();
    const run = ran(
      await pruneExpiredKeys({ trigger: "schedule", batchSize: 100, pauseMs: 1000, signal: abort.signal, onBatch: () => abort.abort() }),
    );
    expect(run).toMatchObject({ stopped: "shutdown", batches: 1, rows: 100 });
    expect(run.durationMs).toBeLessThan(1000); // no pause after the abort
    await pruneExpiredKeys({ trigger: "cli", pauseMs: 0 });
  });

  it("one pruner at a time: two at once → one runs, the other is skipped at once and not recorded", async () => {
    const source = await makeSource();
    await insertKeys(source, 500, "now() - interval '1 hour'");
    const [{ n: runsBefore }] = await sql<{ n: number }>("SELECT count(*) AS n FROM prune_runs");

    const outcomes = await Promise.all([
      pruneExpiredKeys({ trigger: "cli", batchSize: 100, pauseMs: 20 }),
      pruneExpiredKeys({ trigger: "api", batchSize: 100, pauseMs: 20 }),
    ]);

    const runs = outcomes.filter((o) => "run" in o);
    expect(runs).toHaveLength(1);
    expect(outcomes.filter((o) => "skipped" in o)).toEqual([{ skipped: "another prune is running" }]);
    expect(ran(runs[0]).rows).toBe(500);
    const [{ n: runsAfter }] = await sql<{ n: number }>("SELECT count(*) AS n FROM prune_runs");
    expect(runsAfter).toBe(runsBefore + 1);
  });

  it("across processes: while another holder has the pruning lease, a run is skipped and deletes nothing", async () => {
    const source = await makeSource();
    await insertKeys(source, 300, "now() - interval '1 hour'");
    // Another process: its own connection, its own holder name.
    const other = new pg.Client({ connectionString: fileDatabaseUrl() });
    await other.connect();
    try {
      expect(await takeLease(PRUNE_LEASE, "other-host:4242:abcd", PRUNE_LEASE_SECONDS, connectionDb(other))).toBe(true);
      const [{ n: runsBefore }] = await sql<{ n: number }>("SELECT count(*) AS n FROM prune_runs");
      const t0 = performance.now();
      expect(await pruneExpiredKeys({ trigger: "schedule" })).toEqual({ skipped: "another prune is running" });
      expect(performance.now() - t0).toBeLessThan(2000); // returns at once, never waits for the lease
      expect(await countKeys(source)).toBe(300);
      const [{ n: runsAfter }] = await sql<{ n: number }>("SELECT count(*) AS n FROM prune_runs");
      expect(runsAfter).toBe(runsBefore);

      await releaseLease(PRUNE_LEASE, "other-host:4242:abcd", connectionDb(other));
      expect(ran(await pruneExpiredKeys({ trigger: "schedule", pauseMs: 0 })).rows).toBe(300);
      // The run gave the lease back: another holder can take it at once.
      expect(await takeLease(PRUNE_LEASE, "other-host:4242:efgh", PRUNE_LEASE_SECONDS, connectionDb(other))).toBe(true);
      await releaseLease(PRUNE_LEASE, "other-host:4242:efgh", connectionDb(other));
    } finally {
      await other.end();
    }
  });

  it("a dead holder's lease lapses: pruning is skipped until lease_until, then runs", async () => {
    const source = await makeSource();
    await insertKeys(source, 40, "now() - interval '1 hour'");
    // A pruner that took a lease and died without releasing it.
    expect(await takeLease(PRUNE_LEASE, "dead-host:1:dead", 60)).toBe(true);
    expect(await pruneExpiredKeys({ trigger: "schedule", pauseMs: 0 })).toEqual({ skipped: "another prune is running" });
    expect(await countKeys(source)).toBe(40);
    // Its lease_until passes (set by SQL rather than waited for).
    await sql("UPDATE job_leases SET lease_until = now() - interval '1 second' WHERE name = $1", [PRUNE_LEASE]);
    expect(ran(await pruneExpiredKeys({ trigger: "schedule", pauseMs: 0 })).rows).toBe(40);
    const [lease] = await sql("SELECT * FROM job_leases WHERE name = $1", [PRUNE_LEASE]);
    expect(lease).toBeUndefined(); // released at the end of the run
  });

  it("runs from separate connection pools (as from separate processes) never overlap", async () => {
    const source = await makeSource();
    // Three more "processes", each with its own pool, racing the shared pool's run in every round.
    const pools = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: fileDatabaseUrl(), max: 2 }));
    try {
      const runs: PruneRunRecord[] = [];
      let skips = 0;
      for (let round = 0; round < 5; round++) {
        await insertKeys(source, 300, "now() - interval '1 hour'", `r${round}-`);
        const outcomes = await Promise.all(
          [undefined, ...pools].map((on) => pruneExpiredKeys({ trigger: "schedule", batchSize: 100, pauseMs: 50 }, on && connectionDb(on))),
        );
        for (const o of outcomes) if ("run" in o) runs.push(o.run);
        skips += outcomes.filter((o) => "skipped" in o).length;
        expect(outcomes.filter((o) => "run" in o)).toHaveLength(1); // they start together: exactly one runs
      }
      expect(skips).toBe(5 * 3);
      expect(runs.reduce((n, r) => n + r.rows, 0)).toBe(5 * 300);
      // Their recorded spans (database clock) never overlap.
      runs.sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
      for (let i = 1; i < runs.length; i++) expect(Date.parse(runs[i].startedAt)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1].finishedAt!));
      expect(await countKeys(source)).toBe(0);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });

  it("claims keep succeeding during a big prune; a key re-claimed meanwhile is never deleted", async () => {
    const expiredSource = await makeSource();
    const liveSource = await makeSource();
    const backlog = 20_000;
    await insertKeys(expiredSource, backlog, "now() - interval '1 hour' + i * interval '1 ms'");
    // Expired ids the claims below re-claim while the pruner works through the backlog.
    const reclaimIds = Array.from({ length: 200 }, (_, i) => `k${backlog - i * 75}`);

    let pruning = true;
    let batchesSeen = 0;
    const results: { eventId: string; outcome: string; claimKind?: string; duringPrune: boolean }[] = [];
    const prune = pruneExpiredKeys({ trigger: "cli", batchSize: 250, pauseMs: 2, onBatch: () => batchesSeen++ }).finally(() => {
      pruning = false;
    });
    const claim = async (source: string, eventId: string) => {
      const r = await claimEvent({ source, eventId, eventType: "t" });
      results.push({ eventId, outcome: r.outcome, claimKind: r.claimKind, duringPrune: pruning && batchesSeen > 0 });
    };
    const fresh = async () => {
      while (pruning) await claim(liveSource, uniq("new"));
    };
    const reclaims = async () => {
      for (const id of reclaimIds) if (pruning) await claim(expiredSource, id);
    };
    const [outcome] = await Promise.all([prune, fresh(), fresh(), fresh(), reclaims()]);
    const run = ran(outcome);

    expect(run.batches).toBeGreaterThanOrEqual(20);
    expect(results.filter((r) => r.duringPrune).length).toBeGreaterThan(0);
    const newClaims = results.filter((r) => r.eventId.startsWith("new"));
    expect(newClaims.length).toBeGreaterThan(0);
    expect(newClaims.every((r) => r.outcome === "claimed" && r.claimKind === "claimed")).toBe(true);
    expect(await countKeys(liveSource)).toBe(newClaims.length);
    // A re-claimed key started a new lifetime, either on the old row (reclaimed_after_expiry) or after
    // the pruner took the old one (claimed): it is claimed either way and it survives the run.
    const reclaimed = results.filter((r) => !r.eventId.startsWith("new"));
    expect(reclaimed.every((r) => r.outcome === "claimed")).toBe(true);
    expect(await countKeys(expiredSource)).toBe(reclaimed.length);
    const survivedOnOldRow = reclaimed.filter((r) => r.claimKind === "reclaimed_after_expiry").length;
    expect(run.rows).toBe(backlog - survivedOnOldRow);
    expect(run.stopped).toBe("drained");
  });

  it("a failing run is recorded with its error, reported to the caller, and gives the lease back", async () => {
    const source = await makeSource();
    await insertKeys(source, 100, "now() - interval '1 hour'");
    const original = process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;
    process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = "300";
    await closeDb(); // the next pool has the short statement timeout
    const blocker = new pg.Client({ connectionString: fileDatabaseUrl() });
    await blocker.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE dedup_keys IN ACCESS EXCLUSIVE MODE");
      const failure = await pruneExpiredKeys({ trigger: "cli", actor: "test" }).catch((err: unknown) => err);
      expect(failure).toMatchObject({ status: 503, code: "database_unavailable" });
    } finally {
      await blocker.end();
      if (original === undefined) delete process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS;
      else process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = original;
      await closeDb();
    }
    const [latest] = await listPruneRuns(1);
    expect(latest).toMatchObject({ trigger: "cli", actor: "test", stopped: "error", rows: 0, batches: 0 });
    expect(latest.error).toMatch(/database unavailable \(57014\)/);
    expect(latest.finishedAt).not.toBeNull();
    // The failed run released the lease: the next one runs.
    expect(ran(await pruneExpiredKeys({ trigger: "cli", pauseMs: 0 })).rows).toBe(100);
  });

  it("keeps 30 days of run records", async () => {
    const [{ id }] = await sql<{ id: number }>(
      "INSERT INTO prune_runs (started_at, finished_at, mode, trigger, stopped) VALUES (now() - interval '31 days', now() - interval '31 days', 'batch', 'schedule', 'drained') RETURNING id",
    );
    const [{ id: recent }] = await sql<{ id: number }>(
      "INSERT INTO prune_runs (started_at, finished_at, mode, trigger, stopped) VALUES (now() - interval '29 days', now() - interval '29 days', 'batch', 'schedule', 'drained') RETURNING id",
    );
    ran(await pruneExpiredKeys({ trigger: "cli" }));
    expect(await runRow(String(id))).toBeUndefined();
    expect(await runRow(String(recent))).toBeDefined();
  });
});

describe("rowsPerSecond", () => {
  it("is rows over the run's duration, 0 for an empty run, null while unfinished or untimed", () => {
    expect(rowsPerSecond(1000, 500)).toBe(2000);
    expect(rowsPerSecond(1, 3)).toBe(333);
    expect(rowsPerSecond(0, 0)).toBe(0);
    expect(rowsPerSecond(5, 0)).toBeNull();
    expect(rowsPerSecond(5, null)).toBeNull();
  });
});
