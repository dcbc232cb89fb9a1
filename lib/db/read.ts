/**
 * Reads that a read replica may serve (KEYWARD_READ_DATABASE_URL, a streaming standby of DATABASE_URL):
 * the console's read-only queries and audit search (audit search and export, the event page's timeline,
 * the overview). Claims, completes, replays, the key shown on the event page and anything else that must
 * see its own writes use the primary (lib/db/sql.ts `query`), always.
 *
 * - Not configured: every read runs on the primary's pool; nothing changes.
 * - Configured: a read runs on the replica's pool. When the replica cannot answer (down, refused,
 *   black-holed, too slow: `isUnavailable`), the same statement runs on the primary, and reads keep going to
 *   the primary for KEYWARD_READ_RETRY_SECONDS before the replica is tried again, so a dead replica costs
 *   one failed attempt (at most the connect timeout), not one per request. Each switch is logged once.
 *   Only a primary that cannot answer either makes a read a 503. An error that is not unavailability (a
 *   bad statement) is thrown as it is.
 * - Lag: a read on the replica sees the primary as of the replica's last replayed WAL. With streaming
 *   replication on one network that is usually milliseconds, but a long query on the replica, a burst of
 *   writes or a slow disk can stretch it: a claim made a moment ago may not be in the audit search yet.
 *   `readStatus()` reports where reads go; docs/scaling.md says what to watch (pg_stat_replication).
 */
import "server-only";
import type { z } from "zod";
import { loadEnv } from "@/lib/config/env";
import { processGlobal } from "@/lib/process-global";
import { readReplicaPool } from "./client";
import { isUnavailable, query, queryOrThrow, type PreparedSql, type RowSchema } from "./sql";
import type { Db } from "./transaction";

export type ReadTarget = "primary" | "replica" | "primary (replica unavailable)";

const state = processGlobal("readReplicaState", () => ({ primaryUntil: 0, failures: 0, lastError: null as string | null }));

/** Where the next read will go. */
export function readStatus(): { target: ReadTarget; failures: number; lastError: string | null } {
  if (!loadEnv().KEYWARD_READ_DATABASE_URL) return { target: "primary", failures: 0, lastError: null };
  return {
    target: Date.now() < state.primaryUntil ? "primary (replica unavailable)" : "replica",
    failures: state.failures,
    lastError: state.lastError,
  };
}

/**
 * A read-only statement, on `on` when the caller gives one (a transaction, a test's pool), else on the read
 * replica when one is configured and answering, else on the primary.
 */
export async function readQuery<S extends RowSchema>(row: S, sql: string | PreparedSql, values: unknown[] = [], db?: Db): Promise<z.output<S>[]> {
  if (db) return query(row, sql, values, db);
  const replica = readReplicaPool();
  if (!replica || Date.now() < state.primaryUntil) return query(row, sql, values);
  try {
    const rows = await queryOrThrow(row, sql, values, replica);
    if (state.lastError !== null) {
      console.warn("[keyward] read replica answering again: reads go to it");
      state.lastError = null;
    }
    return rows;
  } catch (err) {
    if (!isUnavailable(err)) throw err;
    state.failures++;
    state.primaryUntil = Date.now() + loadEnv().KEYWARD_READ_RETRY_SECONDS * 1000;
    const reason = (err as Error).message;
    if (state.lastError === null) {
      console.warn(`[keyward] read replica unavailable (${reason}): reads go to the primary for ${loadEnv().KEYWARD_READ_RETRY_SECONDS} s, then the replica is tried again`);
    }
    state.lastError = reason;
    return query(row, sql, values);
  }
}

/** Forgets a replica failure (tests; a configuration change). */
export function resetReadStatus(): void {
  state.primaryUntil = 0;
  state.failures = 0;
  state.lastError = null;
}
