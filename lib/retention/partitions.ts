/**
 * Partition mode of the dedup table (opt-in): dedup_keys range-partitioned by UTC day of expiry, so that
 * a day whose keys have all expired is dropped whole instead of deleted row by row.
 *
 * - `enablePartitionMode` / `disablePartitionMode` (`keyward partitions enable|disable`): one
 *   transaction each under an ACCESS EXCLUSIVE lock on dedup_keys (claims wait for it, nothing is lost);
 *   recorded in the operator action log.
 * - `ensureDedupPartitions`: keeps the daily partitions created from today to today + the longest TTL +
 *   DEDUP_DAYS_AHEAD days. Runs at the start of every prune run (prune.ts) in partition mode.
 * - `dropExpiredDedupPartitions`: drops the partitions whose upper bound is at or before now() by the
 *   database clock, one statement each, each waiting at most DROP_LOCK_TIMEOUT_MS for its lock (a DROP
 *   of a partition locks the whole table, and claims queue behind a waiting lock): a busy partition is
 *   left for the next run. Also run by the prune run.
 * The SQL lives in prisma/migrations/20261203000000_partition_mode; docs/architecture.md explains how
 * (source, event_id) stays unique without a unique index.
 */
import "server-only";
import { z } from "zod";
import { recordAction } from "@/lib/audit/actions";
import type { Principal } from "@/lib/auth/principal";
import { KeywardError } from "@/lib/errors";
import { query } from "@/lib/db/sql";
import { forgetDedupMode, readDedupMode, type DedupMode } from "@/lib/claims/mode";
import { loadEnv } from "@/lib/config/env";
import type { Db } from "@/lib/db/transaction";

/** Days of partitions created past the longest TTL. */
export const DEDUP_DAYS_AHEAD = 3;
/** How long a DROP or an ATTACH waits for its lock before giving up until the next run. */
export const DROP_LOCK_TIMEOUT_MS = 500;

export type DedupPartition = {
  name: string;
  /** null for the DEFAULT partition */
  rangeStart: string | null;
  rangeEnd: string | null;
  isDefault: boolean;
  /** The planner's estimate (pg_class.reltuples), 0 before the partition was first analysed. */
  estimatedRows: number;
};

export type PartitionStatus = { mode: DedupMode; partitions: DedupPartition[] };

const PartitionRow = z.object({ name: z.string(), range_start: z.date().nullable(), range_end: z.date().nullable(), is_default: z.boolean(), estimated_rows: z.number() });
type PartitionRow = z.output<typeof PartitionRow>;

const toPartition = (r: PartitionRow): DedupPartition => ({
  name: r.name,
  rangeStart: r.range_start?.toISOString() ?? null,
  rangeEnd: r.range_end?.toISOString() ?? null,
  isDefault: r.is_default,
  estimatedRows: Number(r.estimated_rows),
});

/** The mode, and in partition mode every partition with its range, oldest first, DEFAULT last. */
export async function partitionStatus(db?: Db): Promise<PartitionStatus> {
  const mode = await readDedupMode(db);
  if (mode === "single") return { mode, partitions: [] };
  const rows = await query(PartitionRow, "SELECT * FROM keyward_dedup_partitions()", [], db);
  return { mode, partitions: rows.map(toPartition) };
}

const WRONG_MODE = "55000"; // object_not_in_prerequisite_state, raised by the enable/disable functions

export type ModeSwitch = { mode: DedupMode; partitions: number; rowsMoved: number; durationMs: number };

/** Converts dedup_keys to partition mode (one transaction). 409 if it already is. */
export function enablePartitionMode(actor: Principal | string): Promise<ModeSwitch> {
  return switchMode(actor, {
    to: "partition",
    sql: "SELECT partitions_created AS partitions, rows_moved FROM keyward_partitions_enable($1)",
    values: [DEDUP_DAYS_AHEAD],
    wrongMode: ["already_partitioned", "the dedup table is already in partition mode"],
    action: "partitions.enable",
    partitionsKey: "partitionsCreated",
  });
}

/** Converts dedup_keys back to one table with a unique primary key (one transaction). 409 if it is one. */
export function disablePartitionMode(actor: Principal | string): Promise<ModeSwitch> {
  return switchMode(actor, {
    to: "single",
    sql: "SELECT partitions_dropped AS partitions, rows_moved FROM keyward_partitions_disable()",
    values: [],
    wrongMode: ["not_partitioned", "the dedup table is not in partition mode"],
    action: "partitions.disable",
    partitionsKey: "partitionsDropped",
  });
}

/** Runs one of the two switch functions, forgets the cached mode, and records the switch. */
async function switchMode(
  actor: Principal | string,
  how: { to: DedupMode; sql: string; values: unknown[]; wrongMode: [code: string, message: string]; action: string; partitionsKey: string },
): Promise<ModeSwitch> {
  const start = performance.now();
  let row: { partitions: number; rows_moved: number | string };
  try {
    [row] = await query(z.object({ partitions: z.number(), rows_moved: z.union([z.number(), z.string()]) }), how.sql, how.values);
  } catch (err) {
    if ((err as { code?: string }).code === WRONG_MODE) throw KeywardError.conflict(...how.wrongMode);
    throw err;
  } finally {
    forgetDedupMode();
  }
  const done: ModeSwitch = {
    mode: how.to,
    partitions: row.partitions,
    rowsMoved: Number(row.rows_moved),
    durationMs: Math.round(performance.now() - start),
  };
  await recordAction(actor, {
    action: how.action,
    target: { type: "table", id: "dedup_keys" },
    after: { [how.partitionsKey]: done.partitions, rowsMoved: done.rowsMoved, durationMs: done.durationMs },
  });
  return done;
}

/** Creates the missing daily partitions ahead (0 in single-table mode); returns how many it created. */
export async function ensureDedupPartitions(
  db?: Db,
  daysAhead = DEDUP_DAYS_AHEAD,
  lockTimeoutMs = DROP_LOCK_TIMEOUT_MS,
): Promise<number> {
  const [row] = await query(z.object({ created: z.number() }), "SELECT keyward_ensure_dedup_partitions($1, $2) AS created", [daysAhead, lockTimeoutMs], db);
  return row.created;
}

export type DropResult = {
  dropped: string[];
  /** Rows of the dropped partitions: reltuples once a partition was analysed, else an exact count. */
  rows: number;
  /** A partition whose lock could not be had within the lock timeout; it is retried at the next run. */
  busy: string | null;
};

const LOCK_NOT_AVAILABLE = "55P03";

/**
 * Drops every partition whose range ended at or before now() (database clock), oldest first, one
 * statement each; stops at the first one that stays locked past `lockTimeoutMs`, or when `stopAt`
 * (a performance.now() time) has passed.
 */
export async function dropExpiredDedupPartitions(
  db?: Db,
  options: { lockTimeoutMs?: number; stopAt?: number; onDrop?: (name: string, rows: number) => void } = {},
): Promise<DropResult> {
  const candidates = await query(
    z.object({ name: z.string() }),
    "SELECT name FROM keyward_dedup_partitions() WHERE NOT is_default AND range_end <= now() ORDER BY range_end",
    [],
    db,
  );
  const result: DropResult = { dropped: [], rows: 0, busy: null };
  for (const { name } of candidates) {
    if (options.stopAt !== undefined && performance.now() >= options.stopAt) break;
    let rows: number | null;
    try {
      [{ rows }] = await query(z.object({ rows: z.number().nullable() }), "SELECT keyward_drop_dedup_partition($1, $2) AS rows", [
        name,
        options.lockTimeoutMs ?? DROP_LOCK_TIMEOUT_MS,
      ], db);
    } catch (err) {
      if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) {
        result.busy = name;
        break;
      }
      throw err;
    }
    if (rows === null) continue; // dropped meanwhile by another run, or no longer expired
    result.dropped.push(name);
    result.rows += Number(rows);
    options.onDrop?.(name, Number(rows));
  }
  return result;
}

/**
 * Partition mode "at setup": with KEYWARD_DEDUP_MODE=partition, `keyward migrate` and `keyward start`
 * convert the dedup table if it is still empty (a new install: the conversion is instant), and ensure the
 * partitions ahead. A table that already holds keys is left alone with a hint: converting it locks
 * claims out while the rows are copied, which an operator should choose with `keyward partitions enable`.
 * Returns a line to log, or null when there is nothing to say.
 */
export async function applyDedupModeSetting(): Promise<string | null> {
  const wanted = loadEnv().KEYWARD_DEDUP_MODE;
  const mode = await readDedupMode();
  if (mode === "partition") {
    const created = await ensureDedupPartitions(undefined, DEDUP_DAYS_AHEAD, 0);
    return created > 0 ? `created ${created} daily dedup partition(s) ahead` : null;
  }
  if (wanted !== "partition") return null;
  const [{ empty }] = await query(z.object({ empty: z.boolean() }), "SELECT NOT EXISTS (SELECT 1 FROM dedup_keys) AS empty");
  if (!empty) {
    return "KEYWARD_DEDUP_MODE=partition: the dedup table already holds keys, so it was left in single-table mode; convert it with `keyward partitions enable`";
  }
  const done = await enablePartitionMode("system");
  return `KEYWARD_DEDUP_MODE=partition: dedup table switched to partition mode (${done.partitions} partitions)`;
}
