/**
 * Pruning expired dedup keys: `pruneExpiredKeys` deletes keys whose `expires_at` has passed by the
 * DATABASE clock, never a live one, and never touches the audit history.
 *
 * When it runs: every KEYWARD_PRUNE_INTERVAL_SECONDS inside `keyward start` (schedule.ts), on
 * `keyward prune`, on POST /api/v1/maintenance/prune (operators) and on
 * POST /api/v1/maintenance/prune/external (an external scheduler holding KEYWARD_MAINTENANCE_SECRET).
 *
 * How it bounds its work: batches of at most `batchSize` keys, oldest expiry first through the
 * `expires_at` index, each batch one statement in its own short transaction; a pause between batches so
 * claims get the disk and the locks; and a time budget after which the run stops starting batches. A run
 * ends early once a batch comes back short (nothing expired is left that is not locked by a claim right
 * now; the next run gets those).
 *
 * In partition mode (`keyward partitions enable`, lib/retention/partitions.ts) the same run instead
 * creates the daily partitions ahead, drops every partition whose day has ended (DROP, not DELETE: its
 * cost does not grow with its rows), and prunes the DEFAULT partition (the safety net for keys outside
 * every day) in the batches above. The run is recorded with mode 'partition', partitions_dropped and, as
 * rows, the dropped partitions' row counts (reltuples estimates) plus the keys deleted in batches.
 *
 * One pruner at a time across all instances and processes: the run holds the `prune` lease
 * (lib/db/lease.ts, a row of job_leases renewed while it runs, lapsing PRUNE_LEASE_SECONDS after a dead
 * holder's last renewal); a run that cannot take it returns `{ skipped }` at once and is not recorded
 * (with several instances on one schedule that would be a row per instance per minute). No session
 * state is involved: it holds behind a transaction-mode pooler. Every run
 * that takes the lease is one row of `prune_runs` (kept 30 days).
 */
import "server-only";
import { z } from "zod";
import { loadEnv } from "@/lib/config/env";
import { recordAction } from "@/lib/audit/actions";
import { actorOf, type Principal } from "@/lib/auth/principal";
import { withLease, type HeldLease } from "@/lib/db/lease";
import { execute, query, type PreparedSql } from "@/lib/db/sql";
import {
  PRUNE_SKIPPED,
  rowsPerSecond,
  type PruneOutcome,
  type PruneRequest,
  type PruneRunRecord,
  type PruneStop,
  type PruneTrigger,
} from "./prune-schema";
import { readDedupMode } from "@/lib/claims/mode";
import { countPrunedKeys } from "@/lib/metrics/ops-counters";
import { dropExpiredDedupPartitions, ensureDedupPartitions } from "./partitions";
import { database, type Db } from "@/lib/db/transaction";

/**
 * One batch. The inner SELECT walks the `expires_at` index oldest first and locks up to $1 expired rows,
 * skipping any a claim holds right now (a claim re-claiming an expired key must never wait for the
 * pruner, and the pruner never waits for a claim). The outer DELETE removes exactly those row versions
 * by ctid (a TID scan, no second index walk) and checks expiry again. `now()` is the statement's
 * transaction start: one clock, the database's. Measured against a join on ctid and an `IN` on the
 * primary key, this was the fastest form (docs/benchmarks.md, "Pruning").
 */
export const PRUNE_BATCH_SQL: PreparedSql = {
  name: "keyward_prune_batch",
  text: `DELETE FROM dedup_keys
WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM dedup_keys WHERE expires_at < now()
        ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED))
  AND expires_at < now()`,
};

/** PRUNE_BATCH_SQL on the DEFAULT partition alone (partition mode): a ctid names a row only within one table. */
export const PRUNE_DEFAULT_BATCH_SQL: PreparedSql = {
  name: "keyward_prune_default_batch",
  text: PRUNE_BATCH_SQL.text.replaceAll("dedup_keys", "dedup_keys_default"),
};

/** The lease pruning holds while it runs (job_leases.name). */
export const PRUNE_LEASE = "prune";
/**
 * How long the lease lasts without renewal; renewed every third of it while the run goes on. A killed
 * pruner blocks the next run for at most this long.
 */
export const PRUNE_LEASE_SECONDS = 60;

/** How long the run log keeps its rows. */
export const PRUNE_RUNS_KEPT_DAYS = 30;

export type PruneOptions = {
  trigger: PruneTrigger;
  /** Who started it, as recorded in prune_runs (`user:alice`, `cli:root`, `schedule@host`, …). */
  actor?: string;
  /** Keys per batch (default KEYWARD_PRUNE_BATCH_SIZE). */
  batchSize?: number;
  /** Pause between batches in ms (default KEYWARD_PRUNE_PAUSE_MS). */
  pauseMs?: number;
  /** No batch starts after this many ms from the start (default KEYWARD_PRUNE_BUDGET_MS). At least one batch runs. */
  budgetMs?: number;
  /** Aborting stops the run after its current batch (`stopped: "shutdown"`). */
  signal?: AbortSignal;
  /** Called after every batch that deleted something, with how many keys it deleted. */
  onBatch?: (deleted: number) => void;
};

/**
 * Runs one bounded pruning run now. Resolves with the run's record, or `{ skipped }` when another run (in
 * this or any other process) holds the lease. A run that fails is recorded (`stopped: "error"`) and its
 * error is thrown.
 */
export async function pruneExpiredKeys(options: PruneOptions, db: Db = database()): Promise<PruneOutcome> {
  const held = await withLease(PRUNE_LEASE, PRUNE_LEASE_SECONDS, (lease) => runBatches(db, options, lease), { db });
  return held.held ? { run: held.value } : { skipped: PRUNE_SKIPPED };
}

async function runBatches(client: Db, options: PruneOptions, lease: HeldLease): Promise<PruneRunRecord> {
  const env = loadEnv();
  const budgetMs = options.budgetMs ?? env.KEYWARD_PRUNE_BUDGET_MS;
  const mode = await readDedupMode(client);
  const [{ id }] = await query(
    z.object({ id: z.number() }),
    `WITH run AS (INSERT INTO prune_runs (mode, trigger, actor) VALUES ($3, $1, $2) RETURNING id)
     SELECT id, ${ASYNC_COMMIT} FROM run`,
    [options.trigger, options.actor ?? null, mode === "partition" ? "partition" : "batch"],
    client,
  );
  // The budget bounds this process's work, so it is measured on this process's monotonic clock; which
  // keys are expired is decided by the database's clock alone.
  const start = performance.now();
  const tally = { batches: 0, rows: 0, partitionsDropped: 0 };
  let stopped: PruneStop;
  let failure: unknown;
  try {
    if (mode === "partition") {
      try {
        await ensureDedupPartitions(client);
      } catch (err) {
        // The DEFAULT partition was busy: keys past the partitions still land in it; the next run retries.
        if ((err as { code?: string }).code !== "55P03") throw err;
      }
      const drop = await dropExpiredDedupPartitions(client, { stopAt: start + budgetMs });
      tally.partitionsDropped = drop.dropped.length;
      tally.rows += drop.rows;
      stopped = await batchLoop(client, PRUNE_DEFAULT_BATCH_SQL, options, lease, start, tally);
      if (drop.busy && stopped === "drained") stopped = "lock_timeout";
    } else {
      stopped = await batchLoop(client, PRUNE_BATCH_SQL, options, lease, start, tally);
    }
  } catch (err) {
    stopped = "error";
    failure = err;
  }
  const error = failure === undefined ? null : (failure as Error).message ?? String(failure);
  countPrunedKeys(tally.rows);
  const finished = await finishRun(id, { ...tally, stopped: stopped!, error }, client).catch((err: unknown) => {
    if (failure === undefined) throw err;
    return undefined; // the database is unreachable: the run's own error is the one to report
  });
  if (failure !== undefined) throw failure;
  return finished!;
}

/**
 * Deletes expired keys in batches of `statement` until one comes back short, the budget is spent, or
 * abort. A lost lease (another run took it after this one failed to renew in time) ends the run as an
 * error before its next batch.
 */
async function batchLoop(
  client: Db,
  statement: PreparedSql,
  options: PruneOptions,
  lease: HeldLease,
  start: number,
  tally: { batches: number; rows: number },
): Promise<PruneStop> {
  const env = loadEnv();
  const batchSize = options.batchSize ?? env.KEYWARD_PRUNE_BATCH_SIZE;
  const pauseMs = options.pauseMs ?? env.KEYWARD_PRUNE_PAUSE_MS;
  const budgetMs = options.budgetMs ?? env.KEYWARD_PRUNE_BUDGET_MS;
  for (;;) {
    if (lease.lost.aborted) throw lease.lost.reason;
    const deleted = await execute(statement, [batchSize], client);
    if (deleted > 0) {
      tally.batches++;
      tally.rows += deleted;
      options.onBatch?.(deleted);
    }
    if (deleted < batchSize) return "drained";
    if (performance.now() - start + pauseMs >= budgetMs) return "time_budget";
    if (pauseMs > 0) await pause(pauseMs, options.signal);
    if (options.signal?.aborted) return "shutdown";
  }
}

const RunRow = z.object({
  id: z.union([z.number(), z.bigint()]),
  startedAt: z.date(),
  finishedAt: z.date().nullable(),
  mode: z.string(),
  trigger: z.string(),
  actor: z.string().nullable(),
  batches: z.number(),
  rows: z.union([z.number(), z.bigint()]),
  partitionsDropped: z.number(),
  stopped: z.string().nullable(),
  error: z.string().nullable(),
});
type RunRow = z.output<typeof RunRow>;

/**
 * The run's own record is bookkeeping: its two writes commit without waiting for the disk flush
 * (synchronous_commit off for that transaction alone), which on a busy disk was most of a small run's
 * fixed cost. A crash can lose the record's last update, never a deletion: each batch commits normally.
 */
const ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true) AS async_commit";

const RUN_COLUMNS = `id, started_at AS "startedAt", finished_at AS "finishedAt", mode, trigger, actor, batches, rows,
  partitions_dropped AS "partitionsDropped", stopped, error`;

/** Completes the run's record, and deletes the records older than PRUNE_RUNS_KEPT_DAYS. */
async function finishRun(
  id: number,
  r: { batches: number; rows: number; partitionsDropped: number; stopped: PruneStop; error: string | null },
  db: Db,
): Promise<PruneRunRecord> {
  const [row] = await query(
    RunRow,
    `WITH expired_runs AS (DELETE FROM prune_runs WHERE started_at < now() - make_interval(days => $6)),
     run AS (UPDATE prune_runs SET finished_at = clock_timestamp(), batches = $2, rows = $3, stopped = $4, error = $5,
                                   partitions_dropped = $7
             WHERE id = $1 RETURNING ${RUN_COLUMNS})
     SELECT run.*, ${ASYNC_COMMIT} FROM run`,
    [id, r.batches, r.rows, r.stopped, r.error, PRUNE_RUNS_KEPT_DAYS, r.partitionsDropped],
    db,
  );
  return toRunRecord(row);
}

export function toRunRecord(r: RunRow): PruneRunRecord {
  const durationMs = r.finishedAt ? r.finishedAt.getTime() - r.startedAt.getTime() : null;
  const rows = Number(r.rows);
  return {
    id: String(r.id),
    startedAt: r.startedAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
    mode: r.mode as PruneRunRecord["mode"],
    trigger: r.trigger as PruneTrigger,
    actor: r.actor,
    batches: r.batches,
    rows,
    partitionsDropped: r.partitionsDropped,
    stopped: r.stopped as PruneStop | null,
    error: r.error,
    durationMs,
    rowsPerSecond: rowsPerSecond(rows, durationMs),
  };
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The most recent runs, newest first (the started_at index). */
export async function listPruneRuns(limit: number, db: Db = database()): Promise<PruneRunRecord[]> {
  const rows = await db.prisma.pruneRun.findMany({ orderBy: [{ startedAt: "desc" }, { id: "desc" }], take: limit });
  return rows.map(toRunRecord);
}

/**
 * "Prune now" by a person, an API key or the CLI: one run, recorded in the operator action log as
 * `prune.run` (after: rows and batches; refused when another run held the lease; failed with the reason).
 */
export async function pruneNow(
  principal: Principal,
  trigger: "api" | "cli",
  request: PruneRequest = {},
  address?: string,
): Promise<PruneOutcome> {
  const entry = { action: "prune.run", address };
  let outcome: PruneOutcome;
  try {
    outcome = await pruneExpiredKeys({ ...request, trigger, actor: actorOf(principal) });
  } catch (err) {
    await recordAction(principal, { ...entry, outcome: "failed", reason: (err as Error).message }).catch(() => {});
    throw err;
  }
  if ("skipped" in outcome) {
    await recordAction(principal, { ...entry, outcome: "refused", reason: outcome.skipped });
  } else {
    const { run } = outcome;
    await recordAction(principal, {
      ...entry,
      target: { type: "prune_run", id: run.id },
      after: {
        rows: run.rows,
        batches: run.batches,
        stopped: run.stopped,
        durationMs: run.durationMs,
        ...(run.mode === "partition" ? { partitionsDropped: run.partitionsDropped } : {}),
      },
    });
  }
  return outcome;
}
