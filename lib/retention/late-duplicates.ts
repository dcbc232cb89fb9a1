/**
 * Late duplicates: events processed twice because their key expired before a later delivery.
 *
 * A first claim of (source, event id) — audit kind `claimed`, or `reclaimed_after_expiry` when the
 * expired key was still stored — whose key had an earlier claim in the audit history was processed a
 * second time: the TTL was too short for that delivery. Found here, not on the claim path:
 *
 * What it does, per run (lateDuplicatesJob, every minute inside `keyward start`):
 * 1. reads the audit rows of claims after its position (late_duplicate_cursors, name CURSOR_KEY) that are at
 *    least SETTLE_SECONDS old (a claim's audit `at` is its transaction's start, so a just-committed
 *    claim may carry an older time than one already read; waiting lets them land first), oldest first,
 *    in batches of BATCH_SIZE from windows of at most an hour through the audit (kind, at) index;
 * 2. for each, looks up the key's previous claim or release through the audit (source, event_id, at)
 *    index: a previous `claimed` / `reclaimed_after_expiry` makes it a late duplicate (gap = the time
 *    between the two claims; a lease takeover is the same key, not a new claim), a previous `released`
 *    does not (the key was freed on purpose so the next delivery is processed);
 * 3. marks a late claim `via_replay` when a Keyward replay delivered the event then (its `replayed` audit
 *    row follows the claim within REPLAY_MATCH), and re-checks the last hour's finds for a `replayed` row
 *    that landed after them;
 * 4. deletes late_duplicates and duplicate_ages rows older than 90 days (bounded batches).
 * Each batch and its new position commit together, so a crash re-reads at most one batch
 * (ON CONFLICT DO NOTHING keeps a find once).
 *
 * How it bounds its work: BATCH_SIZE audit rows of one hour's window per statement (so its sort is bounded
 * by an hour's claims, however far behind it is), batches until caught up or BUDGET_MS has
 * passed or the signal aborts; one instance at a time (the job lease `late_duplicates`, lib/db/lease.ts).
 * Every KEYWARD_LATE_DUPLICATES_INTERVAL_SECONDS (default 60; 0 turns it off).
 * A find shows within SETTLE_SECONDS + one interval + one run: under 3 minutes while it keeps up.
 * On a first run it starts DUPLICATE_AGES_KEPT_DAYS back and catches up over the following runs.
 */
import { z } from "zod";
import type { Job } from "@/lib/jobs/registry";
import { loadEnv } from "@/lib/config/env";
import { withLease } from "@/lib/db/lease";
import { query } from "@/lib/db/sql";
import { DUPLICATE_AGES_KEPT_DAYS } from "@/lib/metrics/duplicate-ages";
import { deleteOldDuplicateAges } from "@/lib/metrics/duplicate-age-history";
import type { Db } from "@/lib/db/transaction";

export const CURSOR_KEY = "late_duplicates";
export const SETTLE_SECONDS = 60;
const BATCH_SIZE = 5000;
const BUDGET_MS = 20_000;
/** Claims read per statement come from one window of at most this much audit time. */
const WINDOW = "1 hour";
const LEASE_SECONDS = 60;
const DELETE_BATCH = 10_000;
/** A `replayed` audit row this long after a claim marks the claim as replay-driven. */
const REPLAY_MATCH = "1 hour";

export type DetectOptions = {
  signal?: AbortSignal;
  /** Name of the position in late_duplicate_cursors (tests use their own). */
  cursorKey?: string;
  /** Where a first run starts (default: 90 days back). */
  start?: Date;
  settleSeconds?: number;
  batchSize?: number;
  budgetMs?: number;
  /** Run on this connection or transaction, without taking the lease (the caller orders runs itself). */
  db?: Db;
};

export type DetectOutcome = { scanned: number; found: number; markedReplay: number; deleted: number; batches: number };

/**
 * One batch: the claims after the position, each looked up against the key's audit history, the finds
 * inserted and the position moved, in one statement. $1 cursor key, $2 settle seconds, $3 batch size,
 * $4 start when there is no position yet.
 */
const BATCH_SQL = `
WITH cur AS (
  SELECT coalesce(c.at, $4::timestamptz) AS at, coalesce(c.id, 0) AS id
  FROM (SELECT 1) one LEFT JOIN late_duplicate_cursors c ON c.name = $1
),
-- One window of at most WINDOW after the position, ending before the settle horizon: the sort before
-- LIMIT never holds more than one window's claims, however far behind the position is.
bounds AS (
  SELECT cur.at, cur.id, greatest(cur.at, least(now() - make_interval(secs => $2), cur.at + interval '${WINDOW}')) AS until
  FROM cur
),
batch AS MATERIALIZED (
  SELECT a.at, a.id, a.source, a.event_id, a.event_type, a.kind, a.actor
  FROM audit_events a CROSS JOIN bounds b
  WHERE a.kind IN ('claimed', 'reclaimed_after_expiry')
    AND a.at >= b.at AND (a.at, a.id) > (b.at, b.id) AND a.at < b.until
  ORDER BY a.at, a.id
  LIMIT $3
),
found AS (
  SELECT b.*, p.at AS prev_at
  FROM batch b CROSS JOIN LATERAL (
    SELECT e.at, e.kind FROM audit_events e
    WHERE e.source = b.source AND e.event_id = b.event_id
      AND e.kind IN ('claimed', 'reclaimed_after_expiry', 'released')
      AND (e.at, e.id) < (b.at, b.id)
    ORDER BY e.at DESC, e.id DESC
    LIMIT 1) p
  WHERE b.source IS NOT NULL AND b.event_id IS NOT NULL AND p.kind <> 'released'
),
inserted AS (
  INSERT INTO late_duplicates (source, event_id, event_type, first_claim_at, late_claim_at, gap_seconds, key_state, via_replay, late_actor)
  SELECT f.source, f.event_id, f.event_type, f.prev_at, f.at, extract(epoch FROM f.at - f.prev_at)::float8,
         CASE WHEN f.kind = 'reclaimed_after_expiry' THEN 'unpruned' ELSE 'pruned' END,
         EXISTS (SELECT 1 FROM audit_events r
                 WHERE r.source = f.source AND r.event_id = f.event_id AND r.kind = 'replayed'
                   AND r.at >= f.at AND r.at < f.at + interval '${REPLAY_MATCH}'),
         f.actor
  FROM found f
  ON CONFLICT DO NOTHING
  RETURNING 1
),
scanned AS (SELECT count(*)::int AS n FROM batch),
-- A full batch: on after its last row. Otherwise the window has been read whole: on to its end.
next_pos AS (
  SELECT CASE WHEN s.n = $3 THEN l.at WHEN b.until > b.at THEN b.until ELSE b.at END AS at,
         CASE WHEN s.n = $3 THEN l.id WHEN b.until > b.at THEN 0 ELSE b.id END AS id
  FROM bounds b CROSS JOIN scanned s
  LEFT JOIN LATERAL (SELECT at, id FROM batch ORDER BY at DESC, id DESC LIMIT 1) l ON true
),
moved AS (
  INSERT INTO late_duplicate_cursors (name, at, id, updated_at) SELECT $1, at, id, now() FROM next_pos
  ON CONFLICT (name) DO UPDATE SET at = excluded.at, id = excluded.id, updated_at = excluded.updated_at
  RETURNING at
)
SELECT (SELECT n FROM scanned) AS scanned, (SELECT count(*) FROM inserted)::int AS found,
       (SELECT at FROM moved) >= now() - make_interval(secs => $2) AS caught_up`;

/** A replay's `replayed` row may land after the job has seen the claim: the last hour's finds are re-checked. */
const MARK_REPLAY_SQL = `
UPDATE late_duplicates l SET via_replay = true
WHERE NOT l.via_replay AND l.late_claim_at > now() - interval '${REPLAY_MATCH}'
  AND EXISTS (SELECT 1 FROM audit_events r
              WHERE r.source = l.source AND r.event_id = l.event_id AND r.kind = 'replayed'
                AND r.at >= l.late_claim_at AND r.at < l.late_claim_at + interval '${REPLAY_MATCH}')`;

const DELETE_OLD_SQL = `
WITH old AS (
  SELECT source, event_id, late_claim_at FROM late_duplicates
  WHERE late_claim_at < now() - make_interval(days => $1) ORDER BY late_claim_at LIMIT $2),
del AS (
  DELETE FROM late_duplicates l USING old
  WHERE l.source = old.source AND l.event_id = old.event_id AND l.late_claim_at = old.late_claim_at RETURNING 1)
SELECT count(*)::int AS n FROM del`;

/** One bounded pass (see the header). Without the lease (another instance runs it) it does nothing. */
export async function detectLateDuplicates(options: DetectOptions = {}): Promise<DetectOutcome & { skipped?: true }> {
  const run = async (lost?: AbortSignal): Promise<DetectOutcome> => {
    const db = options.db;
    const batchSize = options.batchSize ?? BATCH_SIZE;
    const deadline = Date.now() + (options.budgetMs ?? BUDGET_MS);
    const start = options.start ?? new Date(Date.now() - DUPLICATE_AGES_KEPT_DAYS * 86400_000);
    const out: DetectOutcome = { scanned: 0, found: 0, markedReplay: 0, deleted: 0, batches: 0 };
    const stop = () => options.signal?.aborted || lost?.aborted || Date.now() >= deadline;
    for (;;) {
      const [r] = await query(
        z.object({ scanned: z.number(), found: z.number(), caught_up: z.boolean() }),
        BATCH_SQL,
        [options.cursorKey ?? CURSOR_KEY, options.settleSeconds ?? SETTLE_SECONDS, batchSize, start],
        db,
      );
      out.batches++;
      out.scanned += r.scanned;
      out.found += r.found;
      if (r.caught_up || stop()) break;
    }
    if (!options.signal?.aborted) {
      const marked = await query(z.object({ n: z.number() }), `WITH u AS (${MARK_REPLAY_SQL} RETURNING 1) SELECT count(*)::int AS n FROM u`, [], db);
      out.markedReplay = marked[0].n;
      const [old] = await query(z.object({ n: z.number() }), DELETE_OLD_SQL, [DUPLICATE_AGES_KEPT_DAYS, DELETE_BATCH], db);
      out.deleted = old.n + (await deleteOldDuplicateAges(db));
    }
    return out;
  };
  if (options.db) return run();
  // One lease per position: runs that share a position never overlap.
  const held = await withLease(options.cursorKey ?? CURSOR_KEY, LEASE_SECONDS, (lease) => run(lease.lost));
  return held.held ? held.value : { scanned: 0, found: 0, markedReplay: 0, deleted: 0, batches: 0, skipped: true };
}

/** The periodic job (lib/jobs/registry.ts), started by `keyward start` (lib/server/start.ts). */
export function lateDuplicatesJob(): Job {
  return {
    name: "late-duplicates",
    /** KEYWARD_LATE_DUPLICATES_INTERVAL_SECONDS (default 60; 0: never). */
    everyMs: loadEnv().KEYWARD_LATE_DUPLICATES_INTERVAL_SECONDS * 1000,
    run: async (signal) => {
      await detectLateDuplicates({ signal });
    },
  };
}
