/**
 * Keeps the audit history's monthly partitions created ahead, and drops the months past its retention
 * (KEYWARD_AUDIT_RETENTION_DAYS, default 400, never below 90: the longest TTL). Runs at every start
 * (after migrating), every 6 hours inside the server, and with `keyward migrate`. Idempotent and cheap:
 * it only creates the months that are missing (moving any of their rows out of the DEFAULT partition
 * first) and drops whole months (no row-by-row DELETE; the append-only trigger stays intact).
 */
import "server-only";
import { z } from "zod";
import { execute, query } from "@/lib/db/sql";
import { loadEnv } from "@/lib/config/env";
import type { Job } from "@/lib/jobs/registry";
import { recordAction } from "./actions";

export const AUDIT_MONTHS_AHEAD = 3;
const EVERY_MS = 6 * 3600 * 1000;

/** Creates the missing monthly partitions up to `monthsAhead` months ahead; returns how many it created. */
export async function ensureAuditPartitions(monthsAhead = AUDIT_MONTHS_AHEAD): Promise<number> {
  const [row] = await query(z.object({ created: z.number() }), "SELECT keyward_ensure_audit_partitions($1) AS created", [monthsAhead]);
  return row.created;
}

/**
 * Drops the monthly partitions whose whole month ended more than `retentionDays` ago, by the database
 * clock. The DEFAULT partition is never dropped. Each drop is recorded in the operator action log as
 * actor `system`. Returns the dropped partitions' names.
 */
export async function dropExpiredAuditPartitions(retentionDays = loadEnv().KEYWARD_AUDIT_RETENTION_DAYS): Promise<string[]> {
  const days = Math.max(90, retentionDays);
  const rows = await query(
    z.object({ name: z.string() }),
    `SELECT c.relname AS name
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'audit_events'::regclass
       AND c.relname ~ '^audit_events_[0-9]{4}_[0-9]{2}$'
       AND to_date(substr(c.relname, 14), 'YYYY_MM') + interval '1 month' <= now() - make_interval(days => $1)
     ORDER BY c.relname`,
    [days],
  );
  const dropped: string[] = [];
  for (const { name } of rows) {
    try {
      await execute(`DROP TABLE "${name.replace(/"/g, "")}"`);
    } catch (err) {
      if ((err as { code?: string }).code === "42P01") continue; // another instance dropped it first
      throw err;
    }
    dropped.push(name);
    await recordAction("system", {
      action: "audit.drop_partition",
      target: { type: "audit_partition", id: name },
      reason: `older than the audit retention of ${days} days`,
    });
  }
  return dropped;
}

/**
 * The upkeep as a job of the registry (lib/jobs/registry.ts, started by `keyward start`): every 6 hours,
 * create the months ahead and drop the months past retention. Either step failing does not skip the other;
 * the failure is logged and both run again at the next tick.
 */
export function auditPartitionsJob(): Job {
  return {
    name: "audit partition upkeep",
    everyMs: EVERY_MS,
    async run() {
      const [ensured, dropped] = await Promise.allSettled([ensureAuditPartitions(), dropExpiredAuditPartitions()]);
      const failed = [
        ensured.status === "rejected" && `creating audit partitions: ${(ensured.reason as Error).message}`,
        dropped.status === "rejected" && `dropping old audit partitions: ${(dropped.reason as Error).message}`,
      ].filter(Boolean);
      if (failed.length) throw new Error(failed.join("; "));
    },
  };
}
