/**
 * Keys at risk per source, for the metrics sampler (lib/metrics/sampler.ts, once a minute on one
 * instance) and the notification evaluator (lib/notify): pending dead letters whose event was processed
 * and whose dedup key is gone or expired (a replay would process it a second time), and those whose key
 * expires within the next 24 hours (replay them, or extend the keys, before then). The same rule as the
 * dead-letter list's counts (lib/keys/verdict.ts, through list.ts KEY_JOIN), grouped by source.
 *
 * Bounded: at most RISK_SCAN_LIMIT pending letters are looked at (oldest failures first), each with one
 * probe of dedup_keys by its key and one of the audit history.
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { database, type Db } from "@/lib/db/transaction";
import { KEY_UNSAFE_SQL } from "@/lib/keys/verdict";
import { KEY_JOIN } from "./list";

export const RISK_SCAN_LIMIT = 100_000;
/** A pending letter whose key expires sooner than this is "expiring". */
export const EXPIRING_WITHIN_HOURS = 24;

export type KeyRiskBySource = Map<string, { expired: number; expiring: number }>;

/** Raw SQL: the list's LATERAL key and audit lookups (KEY_JOIN), grouped. `db`: a handle or the sampler's connection. */
export async function keyRiskBySource(db: Db = database()): Promise<KeyRiskBySource> {
  const rows = await query(
    z.object({ source: z.string(), expired: z.number(), expiring: z.number() }),
    `SELECT d.source,
            count(*) FILTER (WHERE ${KEY_UNSAFE_SQL})::int8 AS expired,
            count(*) FILTER (WHERE key.expires_at > now() AND key.expires_at <= now() + make_interval(hours => $2))::int8 AS expiring
     FROM (SELECT id, source, event_id FROM dead_letters WHERE status = 'pending' ORDER BY source, failed_at LIMIT $1) d
     ${KEY_JOIN}
     GROUP BY d.source`,
    [RISK_SCAN_LIMIT, EXPIRING_WITHIN_HOURS],
    db,
  );
  return new Map(rows.map((r) => [r.source, { expired: r.expired, expiring: r.expiring }]));
}
