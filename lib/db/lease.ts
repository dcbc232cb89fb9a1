/**
 * Leases: "one holder at a time" for jobs that must not run twice at once across instances (pruning;
 * any job can use its own name). A lease is a row of `job_leases` (name, holder, lease_until), taken,
 * renewed and released by single statements on the DATABASE clock. Unlike a session-level advisory lock
 * it needs no session state, so it holds through a transaction-mode pooler (PgBouncer).
 *
 * - Taking is one `INSERT … ON CONFLICT DO UPDATE … WHERE`: it succeeds if there is no row, the row's
 *   lease has lapsed, or the row is already this holder's. Two takers at once: the second waits for the
 *   first's row, re-reads it, finds it live and gets nothing. It never waits for a job to finish.
 * - A holder renews while it works (`withLease` every third of the lease); a holder that dies stops
 *   renewing and its lease lapses at lease_until, after which anyone may take it.
 * - A holder that could not renew in time (a frozen process) may find the lease taken by another: its
 *   `lost` signal fires, and the job must stop at its next safe point.
 * - Releasing deletes the row if it is still this holder's.
 */
import "server-only";
import { z } from "zod";
import { randomUUID } from "node:crypto";
import os from "node:os";
import { execute, query } from "./sql";
import { database, type Db } from "./transaction";
import { startHeartbeat } from "@/lib/jobs/heartbeat";

/** Who holds a lease: host, process and a per-run token, so two runs of one process are two holders. */
export function leaseHolder(): string {
  return `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** Takes lease `name` for `seconds` if it is free, lapsed, or already `holder`'s. True if `holder` now has it. */
export async function takeLease(name: string, holder: string, seconds: number, db: Db = database()): Promise<boolean> {
  const rows = await query(
    z.object({ holder: z.string() }),
    `INSERT INTO job_leases AS l (name, holder, lease_until) VALUES ($1, $2, now() + make_interval(secs => $3::float8))
     ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until
     WHERE l.lease_until <= now() OR l.holder = excluded.holder
     RETURNING holder`,
    [name, holder, seconds],
    db,
  );
  return rows.length === 1;
}

/** Extends `holder`'s lease by `seconds` from now. False if another holder has taken it meanwhile (or it was released). */
export async function renewLease(name: string, holder: string, seconds: number, db: Db = database()): Promise<boolean> {
  const rows = await query(
    z.object({ holder: z.string() }),
    "UPDATE job_leases SET lease_until = now() + make_interval(secs => $3::float8) WHERE name = $1 AND holder = $2 RETURNING holder",
    [name, holder, seconds],
    db,
  );
  return rows.length === 1;
}

/** Gives the lease back if `holder` still has it. */
export async function releaseLease(name: string, holder: string, db: Db = database()): Promise<void> {
  await execute("DELETE FROM job_leases WHERE name = $1 AND holder = $2", [name, holder], db);
}

export type HeldLease = {
  name: string;
  holder: string;
  /** Fires if a renewal finds the lease held by someone else: stop at the next safe point. */
  lost: AbortSignal;
};

/**
 * Runs `job` holding lease `name`: `{ held: false }` at once if another holder has it (the job does not
 * run), else `{ held: true, value }`. Renews every `seconds / 3` while the job runs and releases at the
 * end, also when the job throws. A renewal that fails on a database fault is retried at the next tick
 * (the lease stays valid until lease_until); one that finds the lease taken fires `lost`.
 */
export async function withLease<T>(
  name: string,
  seconds: number,
  job: (lease: HeldLease) => Promise<T>,
  { holder = leaseHolder(), db = database() }: { holder?: string; db?: Db } = {},
): Promise<{ held: true; value: T } | { held: false }> {
  if (!(await takeLease(name, holder, seconds, db))) return { held: false };
  const lost = new AbortController();
  // A heartbeat (lib/jobs/heartbeat.ts): one renewal at a time; an unreachable database is left to the
  // job's own statements to report, and retried at the next beat.
  const renewal = startHeartbeat(Math.max(100, (seconds * 1000) / 3), async () => {
    if (lost.signal.aborted) return;
    if (!(await renewLease(name, holder, seconds, db))) lost.abort(new Error(`the ${name} lease lapsed and was taken by another holder`));
  });
  try {
    return { held: true, value: await job({ name, holder, lost: lost.signal }) };
  } finally {
    await renewal.stop();
    await releaseLease(name, holder, db).catch(() => {}); // unreachable: the lease lapses on its own
  }
}
