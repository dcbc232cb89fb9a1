/**
 * The metrics sampler: once a minute (KEYWARD_SAMPLE_INTERVAL_SECONDS; 0 turns it off) one row of
 * metric_samples describing the dedup table and the claims of the minute before, for the Overview's
 * charts. Runs inside `keyward start` (metricsSamplerJob, through lib/jobs/registry.ts); a failed sample is
 * logged and the next tick tries again, it never stops the server.
 *
 * One instance at a time: a sample is one transaction that first takes a transaction-level advisory
 * lock (an instance that cannot take it skips the minute), then skips a minute that already has its
 * row, and inserts with ON CONFLICT (at) DO NOTHING as the last word. The lock is released by the
 * commit, so nothing outlives a crash.
 *
 * How it bounds its work on a large table (no count over the whole table):
 * - sizes: pg_total_relation_size / pg_indexes_size of each leaf (catalog reads);
 * - rows: pg_class.reltuples scaled to the current size, summed over partitions (estimate.ts);
 * - expiry backlog: the expires_at index walked up to BACKLOG_CAP + 1 entries (`backlog_capped` says
 *   when the count stopped there); alive keys likewise up to ALIVE_COUNT_CAP, exact below it;
 * - in flight: the partial index dedup_keys_in_flight_idx (only keys holding a lease);
 * - claims and duplicates: claim_counts buckets through its (bucket, source) primary key;
 * - per source: alive keys, backlog and in flight, counted or sampled within the same bounds (per-source.ts);
 * - per source: pending dead letters whose keys are at risk (lib/deadletters/risk.ts: at most 100,000
 *   letters, one key probe each), for GET /metrics and its alerts;
 * - retention: samples older than 30 days, at most PRUNE_BATCH rows per run.
 */
import "server-only";
import { z } from "zod";
import { loadEnv } from "@/lib/config/env";
import { query } from "@/lib/db/sql";
import type { Job } from "@/lib/jobs/registry";
import { LeafStats, tableFigures, type TableFigures } from "./estimate";
import { measureSourceKeys, type SourceKeys } from "./per-source";
import { keyRiskBySource } from "@/lib/deadletters/risk";
import { database, withTransaction, type Db } from "@/lib/db/transaction";

/** The expiry backlog is counted up to this many keys; beyond it the sample says "at least". */
export const BACKLOG_CAP = 1_000_000;
/** Alive keys are counted exactly up to this many, estimated above. */
export const ALIVE_COUNT_CAP = 100_000;
/** How long samples are kept. */
export const SAMPLES_KEPT_DAYS = 30;
/** Old samples deleted per run at most (one a minute accrues; this catches up after downtime). */
const PRUNE_BATCH = 10_000;
/** The advisory lock key of the sampler ("kwsample" as a bigint), taken per transaction. */
export const SAMPLER_LOCK_KEY = "7743784946571963493";

export type SampleOptions = {
  /** Expired keys counted at most (default BACKLOG_CAP). */
  backlogCap?: number;
  /** Alive keys counted exactly at most (default ALIVE_COUNT_CAP). */
  aliveCap?: number;
  /** Minutes of claim_counts summed into claims and duplicates, ending at the sample's minute (default 1). */
  claimMinutes?: number;
  /** The minute to record the sample under (default: the database's current minute). For tests. */
  at?: Date;
};

export type SampleOutcome = { outcome: "written" | "exists" | "locked"; at: Date };

/**
 * Pending dead letters of a source whose keys are at risk (lib/deadletters/risk.ts): processed events whose
 * key is gone (`keysAtRisk`: a replay processes them twice), and keys expiring within 24 hours.
 */
export type SourceKeyRisk = { keysAtRisk: number; keysExpiringSoon: number };

/** The figures of one sample, measured now. Reads only; takeSample writes them. */
export type Measurement = TableFigures & {
  tableBytes: number;
  indexBytes: number;
  inFlight: number;
  claims: number;
  duplicates: number;
  /** Per configured source: its claims and duplicates, and its key counts (per-source.ts). */
  perSource: Record<string, { claims: number; duplicates: number } & Partial<SourceKeys> & Partial<SourceKeyRisk>>;
};

/**
 * Takes this minute's sample unless another instance is taking it or it exists. The claim counts of
 * the minute(s) before `at` are complete except for what processes have not flushed yet (at most 5 s,
 * lib/metrics/claim-counts.ts); flushing this process's own counters first would not help, since a
 * flush adds to the current minute's bucket, not the previous one.
 */
/** The bound on one sample's transaction (each statement is bounded by the statement timeout too). */
const SAMPLE_TIMEOUT_MS = 60_000;

export async function takeSample(options: SampleOptions = {}, db: Db = database()): Promise<SampleOutcome> {
  // One transaction: the advisory lock is transaction-scoped (no session state, so it holds through a
  // transaction-mode pooler), and the sample, its figures and the old samples' deletion commit together.
  return withTransaction(
    async (tx) => {
      const [{ locked, at }] = await query(
        z.object({ locked: z.boolean(), at: z.date() }),
        `SELECT pg_try_advisory_xact_lock($1::bigint) AS locked, coalesce($2::timestamptz, date_trunc('minute', now())) AS at`,
        [SAMPLER_LOCK_KEY, options.at ?? null],
        tx,
      );
      if (!locked) return { outcome: "locked", at };
      const [{ exists }] = await query(z.object({ exists: z.boolean() }), "SELECT EXISTS (SELECT 1 FROM metric_samples WHERE at = $1) AS exists", [at], tx);
      let written = false;
      if (!exists) {
        const m = await measure(tx, at, options);
        const inserted = await query(
          z.object({ at: z.date() }),
          `INSERT INTO metric_samples (at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, backlog_capped,
                                       in_flight, claims, duplicates, per_source)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           ON CONFLICT (at) DO NOTHING RETURNING at`,
          [
            at, m.tableBytes, m.indexBytes, m.estimatedRows, m.aliveKeys, m.expiryBacklog, m.backlogCapped,
            m.inFlight, m.claims, m.duplicates, JSON.stringify(m.perSource),
          ],
          tx,
        );
        written = inserted.length === 1;
      }
      await deleteOldSamples(tx);
      return { outcome: written ? "written" : "exists", at };
    },
    { db, timeout: SAMPLE_TIMEOUT_MS },
  );
}

/** Deletes samples older than SAMPLES_KEPT_DAYS, oldest first, at most PRUNE_BATCH; returns how many. */
export async function deleteOldSamples(db?: Db): Promise<number> {
  const rows = await query(
    z.object({ at: z.date() }),
    `DELETE FROM metric_samples WHERE at IN (
       SELECT at FROM metric_samples WHERE at < now() - make_interval(days => $1) ORDER BY at LIMIT $2)
     RETURNING at`,
    [SAMPLES_KEPT_DAYS, PRUNE_BATCH],
    db,
  );
  return rows.length;
}

const LeafRow = LeafStats.extend({ total_bytes: z.number(), index_bytes: z.number() });

/** Reads the figures of a sample for minute `at` (the claim window ends there). */
export async function measure(db: Db, at: Date, options: Omit<SampleOptions, "at"> = {}): Promise<Measurement> {
  const backlogCap = options.backlogCap ?? BACKLOG_CAP;
  const aliveCap = options.aliveCap ?? ALIVE_COUNT_CAP;
  const claimMinutes = options.claimMinutes ?? 1;

  // The table itself, or if it is ever partitioned its leaf partitions: a partitioned parent has no
  // storage of its own, and neither do its indexes. (pg_partition_tree lists nothing for a plain table.)
  const leaves = await query(
    LeafRow,
    `WITH t AS (SELECT oid, relkind FROM pg_class WHERE oid = 'dedup_keys'::regclass),
     leaf AS (
       SELECT oid FROM t WHERE relkind <> 'p'
       UNION ALL
       SELECT p.relid FROM t CROSS JOIN LATERAL pg_partition_tree(t.oid) p WHERE t.relkind = 'p' AND p.isleaf
     )
     SELECT pg_total_relation_size(c.oid) AS total_bytes, pg_indexes_size(c.oid) AS index_bytes,
            c.reltuples::float8 AS reltuples, c.relpages,
            (pg_relation_size(c.oid) / current_setting('block_size')::int8)::float8 AS pages
     FROM leaf JOIN pg_class c ON c.oid = leaf.oid`,
    [],
    db,
  );
  // Both counts walk the expires_at index in order and stop after cap + 1 entries, whatever the table's
  // size. "Expired" is the claim rule: expires_at <= now() (the database clock).
  const [counts] = await query(
    z.object({ backlog: z.number(), alive: z.number(), in_flight: z.number() }),
    `SELECT (SELECT count(*) FROM (SELECT 1 FROM dedup_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT $1) b) AS backlog,
            (SELECT count(*) FROM (SELECT 1 FROM dedup_keys WHERE expires_at > now() ORDER BY expires_at LIMIT $2) a) AS alive,
            (SELECT count(*) FROM dedup_keys WHERE status = 'processing' AND expires_at > now()) AS in_flight`,
    [backlogCap + 1, aliveCap + 1],
    db,
  );
  const perSourceRows = await query(
    z.object({ source: z.string(), claims: z.number(), duplicates: z.number() }),
    `SELECT source, sum(claimed)::int8 AS claims, sum(duplicate)::int8 AS duplicates
     FROM claim_counts
     WHERE bucket >= $1::timestamptz - make_interval(mins => $2) AND bucket < $1::timestamptz
     GROUP BY source ORDER BY source`,
    [at, claimMinutes],
    db,
  );

  const figures = tableFigures(leaves, { backlog: counts.backlog, backlogCap, alive: counts.alive, aliveCap });
  const keysBySource = await measureSourceKeys(db, figures);
  const risk = await keyRiskBySource(db);
  const sources = await query(z.object({ name: z.string() }), "SELECT name FROM sources", [], db);

  const perSource: Measurement["perSource"] = {};
  let claims = 0;
  let duplicates = 0;
  for (const r of perSourceRows) {
    claims += r.claims;
    duplicates += r.duplicates;
    if (r.claims > 0 || r.duplicates > 0) perSource[r.source] = { claims: r.claims, duplicates: r.duplicates };
  }
  // Every configured source gets its key counts (0 when it has none), so a source's chart shows zeros, not gaps.
  for (const { name } of sources) {
    const keys = keysBySource.get(name) ?? { aliveKeys: 0, expiryBacklog: 0, inFlight: 0, keysEstimated: !figures.exact };
    const r = risk.get(name);
    perSource[name] = { ...(perSource[name] ?? { claims: 0, duplicates: 0 }), ...keys, keysAtRisk: r?.expired ?? 0, keysExpiringSoon: r?.expiring ?? 0 };
  }
  return {
    ...figures,
    tableBytes: leaves.reduce((n, l) => n + l.total_bytes, 0),
    indexBytes: leaves.reduce((n, l) => n + l.index_bytes, 0),
    inFlight: counts.in_flight,
    claims,
    duplicates,
    perSource,
  };
}

/** Milliseconds until the next multiple of `everyMs` on the wall clock, plus a small offset. */
export function msUntilNextTick(nowMs: number, everyMs: number, offsetMs = 2000): number {
  const next = Math.floor(nowMs / everyMs) * everyMs + everyMs + offsetMs;
  return next - nowMs > everyMs ? next - nowMs - everyMs : next - nowMs;
}

/**
 * The sampler as a job of the registry (lib/jobs/registry.ts, started by `keyward start`): takeSample every
 * KEYWARD_SAMPLE_INTERVAL_SECONDS (0: off), on the wall clock's minute (plus 2 s), so every instance aims
 * at the same minute and one of them writes it. Stopping the registry waits for a sample in progress.
 */
export function metricsSamplerJob(): Job {
  const everySeconds = loadEnv().KEYWARD_SAMPLE_INTERVAL_SECONDS;
  const everyMs = everySeconds * 1000;
  const claimMinutes = everySeconds / 60; // whole minutes (lib/config/env.ts)
  return {
    name: "taking a metrics sample",
    everyMs,
    nextDelayMs: () => msUntilNextTick(Date.now(), everyMs),
    async run() {
      await takeSample({ claimMinutes });
    },
  };
}
