/**
 * Keeps the audit history's monthly partitions created ahead. Runs at every start (after migrating),
 * every 6 hours inside the server, and with `keyward migrate`. Idempotent and cheap: it only creates the
 * months that are missing (moving any of their rows out of the DEFAULT partition first).
 */
import { query } from "../db/sql";

export const AUDIT_MONTHS_AHEAD = 3;
const EVERY_MS = 6 * 3600 * 1000;

/** Creates the missing monthly partitions up to `monthsAhead` months ahead; returns how many it created. */
export async function ensureAuditPartitions(monthsAhead = AUDIT_MONTHS_AHEAD): Promise<number> {
  const [row] = await query<{ created: number }>("SELECT keyward_ensure_audit_partitions($1) AS created", [monthsAhead]);
  return row.created;
}

/** Runs ensureAuditPartitions on a timer (unref'd); returns a function that stops it. */
export function scheduleAuditPartitions(log: (msg: string) => void): () => void {
  const timer = setInterval(() => {
    ensureAuditPartitions().catch((err) => log(`creating audit partitions failed (will retry): ${(err as Error).message}`));
  }, EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
