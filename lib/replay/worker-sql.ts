/**
 * The replay worker's statements (executor.ts, feed.ts, drive.ts, settle-queue.ts). Hand-written SQL, not Prisma:
 * each one leases, settles or audits a whole batch in one round trip (`FOR UPDATE SKIP LOCKED`, data-
 * modifying CTEs, `unnest` of arrays), which Prisma's query API cannot express; docs/benchmarks.md
 * ("Re-drive throughput") shows what the round trips cost. The hot ones are prepared (PreparedSql).
 */
import "server-only";
import { z } from "zod";
import type { PreparedSql } from "@/lib/db/sql";
import { KEY_FACT_COLUMNS, keyFactsJoin, KeyFactsRow } from "@/lib/keys/verdict";

/**
 * Raw SQL: SKIP LOCKED across replays, so each running replay has one driver at a time. Only a replay with
 * work now: an item due (pending, its next attempt time passed), an item in delivery (a dead worker's, to
 * take over), or nothing left at all (to complete it). A replay whose items all wait for a later retry is
 * left alone until the first comes due (the partial index replay_items_pending_due_idx finds it), so
 * no worker holds it, or polls it, meanwhile.
 */
export const TAKE_REPLAYS_SQL = `
UPDATE replays r SET worker = $1, worker_lease_until = now() + make_interval(secs => $2::int)
FROM (SELECT id FROM replays
      WHERE status = 'running' AND NOT (id = ANY($3::uuid[]))
        AND (worker IS NULL OR worker = $1 OR worker_lease_until < now())
        AND ($5::text[] IS NULL OR source = ANY($5::text[]))
        AND (coalesce((SELECT min(i.next_attempt_at) FROM replay_items i WHERE i.replay_id = replays.id AND i.outcome = 'pending'), '-infinity') <= now()
             OR EXISTS (SELECT 1 FROM replay_items i WHERE i.replay_id = replays.id AND i.outcome = 'delivering'))
      ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED) pick
WHERE r.id = pick.id
RETURNING r.id, r.source, r.rate_per_second, r.concurrency, r.forced, r.created_by, r.destination,
          r.retry_max_attempts, r.retry_initial_ms, r.retry_max_delay_ms`;

/** Raw SQL: how long until the replay's earliest waiting item is due (ms; null: none waits). */
export const NEXT_DUE_SQL = `
SELECT extract(epoch FROM min(next_attempt_at) - now())::float8 * 1000 AS wait_ms
FROM replay_items WHERE replay_id = $1::uuid AND outcome = 'pending'`;

/**
 * Raw SQL: renews the replay's lease and its leased items' leases in one statement; answers the replay's
 * status (no row: the lease was lost).
 */
export const HEARTBEAT_SQL = `
WITH r AS (
  UPDATE replays SET worker_lease_until = now() + make_interval(secs => $3::int)
  WHERE id = $1::uuid AND worker = $2 RETURNING status),
items AS (
  UPDATE replay_items SET lease_until = now() + make_interval(secs => $3::int)
  WHERE replay_id = $1::uuid AND outcome = 'delivering' AND leased_by = $2 AND EXISTS (SELECT 1 FROM r))
SELECT status FROM r`;

const LeaseRowBase = KeyFactsRow.extend({
  status: z.string(),
  now: z.date(),
  /**
   * The payload's bytes exactly as received at intake, when they are at most 1 MiB (payload-store.ts
   * INLINE_MAX_BYTES); null when larger (read chunk by chunk just before its send) or the letter is gone.
   */
  body: z.instanceof(Buffer).nullable(),
  /** The payload's size; null when the letter no longer exists. */
  payload_bytes: z.number().nullable(),
  content_type: z.string().nullable(),
});

/**
 * A row of LEASE_BATCH_SQL: the replay's status, and (when any were leased) one leased item each; when none
 * was, the one row the LEFT JOIN keeps, its item columns null.
 */
export const LeaseRow = z.union([
  LeaseRowBase.extend({ dead_letter_id: z.string(), event_id: z.string(), category: z.string(), attempts: z.number() }),
  LeaseRowBase.extend({ dead_letter_id: z.null(), event_id: z.null(), category: z.null(), attempts: z.null() }),
]);
export type LeaseRow = z.output<typeof LeaseRow>;

/**
 * Raw SQL (one round trip per batch, instead of four per batch and one per item): renews the replay's
 * lease and reads its status; only while it is `running`, leases up to $2 due items (pending and due, or
 * delivering with a lapsed lease: `FOR UPDATE SKIP LOCKED`, so one worker holds an item at a time); and
 * returns each with its payload (up to 1 MiB: a batch of 100 never holds 100 large payloads) and the facts of
 * the pre-send re-check (lib/keys/verdict.ts keyFactsJoin, the one reading shared with the preflight's
 * replay/facts.ts), all as of this statement's now(). No row: the replay's lease was lost. One row with a
 * null dead_letter_id: nothing was leased. $1 replay, $2 limit, $3 lease seconds, $4 worker, $5 source.
 */
export const LEASE_BATCH_SQL: PreparedSql = {
  name: "keyward_replay_lease_batch",
  text: `
WITH r AS (
  UPDATE replays SET worker_lease_until = now() + make_interval(secs => $3::int)
  WHERE id = $1::uuid AND worker = $4 RETURNING status),
pick AS (
  SELECT replay_id, dead_letter_id FROM replay_items
  WHERE replay_id = $1::uuid AND EXISTS (SELECT 1 FROM r WHERE status = 'running')
    AND ((outcome = 'pending' AND next_attempt_at <= now()) OR (outcome = 'delivering' AND lease_until < now()))
  ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED),
leased AS (
  UPDATE replay_items i SET outcome = 'delivering', lease_until = now() + make_interval(secs => $3::int), leased_by = $4
  FROM pick WHERE i.replay_id = pick.replay_id AND i.dead_letter_id = pick.dead_letter_id
  RETURNING i.dead_letter_id, i.event_id, i.category, i.attempts, i.seq)
SELECT r.status, now() AS now, l.dead_letter_id, l.event_id, l.category, l.attempts,
       CASE WHEN d.payload_bytes <= 1048576 THEN d.payload END AS body, d.payload_bytes, d.content_type,
       ${KEY_FACT_COLUMNS}
FROM r
LEFT JOIN leased l ON true
LEFT JOIN dead_letters d ON d.id = l.dead_letter_id
${keyFactsJoin("$5", "l.event_id")}
ORDER BY l.seq`,
};

/**
 * Raw SQL (one round trip per batch of results, instead of one per item): records the results of several
 * items at once, each only while this worker ($3) still holds the item's lease, so a result is never
 * written twice. Per item ($4…$15): outcome delivered | failed | skipped_unsafe | retry (a retry goes back
 * to pending after delay_ms, or becomes cancelled when the replay was cancelled meanwhile), whether it was
 * an attempt, and the HTTP status and error of that same attempt (touch_last false: leave the item's last
 * status and error as they were, for an item given back unsent), and the attempt's evidence. In this same
 * statement: final outcomes settle the dead letter (its last status and error from the same attempt) and
 * append the audit `replayed` row ($2 = actor); each attempt is kept in replay_attempts; the replay's
 * health is updated ($16 a delivery in this batch, $17 failed attempts after the last delivery, $18/$19 the
 * latest failure), $20/$21 each attempt's headers sent and received (JSON text of [name, value] pairs).
 */
export const SETTLE_BATCH_SQL: PreparedSql = {
  name: "keyward_replay_settle_batch",
  text: `
WITH u AS (
  SELECT * FROM unnest($4::uuid[], $5::text[], $6::int[], $7::int[], $8::text[], $9::boolean[], $10::float8[], $11::boolean[],
                       $12::timestamptz[], $13::text[], $14::int[], $15::text[], $20::text[], $21::text[])
    AS u(dead_letter_id, outcome, counted, status, error, touch_last, delay_ms, forced, at, destination, latency_ms, response_body,
         request_headers, response_headers)),
dec AS (
  SELECT u.*, CASE WHEN u.outcome <> 'retry' THEN u.outcome
                   WHEN (SELECT status FROM replays WHERE id = $1::uuid) = 'cancelled' THEN 'cancelled'
                   ELSE 'pending' END AS final
  FROM u),
it AS (
  UPDATE replay_items i
  SET outcome = dec.final, attempts = i.attempts + dec.counted,
      last_status = CASE WHEN dec.touch_last THEN dec.status ELSE i.last_status END,
      last_error = CASE WHEN dec.touch_last THEN dec.error ELSE i.last_error END,
      next_attempt_at = CASE WHEN dec.final = 'pending' THEN now() + make_interval(secs => dec.delay_ms / 1000) ELSE i.next_attempt_at END,
      finished_at = CASE WHEN dec.final = 'pending' THEN NULL ELSE now() END,
      lease_until = NULL, leased_by = NULL
  FROM dec
  WHERE i.replay_id = $1::uuid AND i.dead_letter_id = dec.dead_letter_id AND i.outcome = 'delivering' AND i.leased_by = $3
  RETURNING i.replay_id, i.dead_letter_id, i.outcome, i.attempts, i.last_status, i.last_error,
            dec.forced, dec.counted, dec.at, dec.destination, dec.latency_ms, dec.response_body, dec.request_headers, dec.response_headers),
dl AS (
  UPDATE dead_letters d
  SET status = CASE WHEN it.outcome = 'delivered' THEN 'delivered' ELSE 'pending' END,
      settled_at = CASE WHEN it.outcome = 'delivered' THEN now() END,
      last_replay_error = CASE WHEN it.outcome = 'delivered' THEN NULL ELSE it.last_error END,
      last_replay_status = CASE WHEN it.outcome = 'delivered' THEN NULL ELSE it.last_status END
  FROM it WHERE d.id = it.dead_letter_id AND it.outcome <> 'pending' AND d.status = 'replaying'),
attempts AS (
  INSERT INTO replay_attempts (replay_id, dead_letter_id, attempt, at, destination, status, latency_ms, response_body, error, outcome,
                               request_headers, response_headers)
  SELECT it.replay_id, it.dead_letter_id, it.attempts, it.at, it.destination, it.last_status, it.latency_ms, it.response_body, it.last_error,
         CASE WHEN it.outcome = 'pending' THEN 'retry' ELSE it.outcome END, it.request_headers::jsonb, it.response_headers::jsonb
  FROM it WHERE it.counted = 1),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT d.source, d.event_id, d.event_type, 'replayed', $2,
         jsonb_strip_nulls(jsonb_build_object('replayId', it.replay_id, 'deadLetterId', it.dead_letter_id, 'outcome', it.outcome,
                                              'attempts', it.attempts, 'status', it.last_status, 'error', it.last_error,
                                              'forced', CASE WHEN it.forced THEN true END))
  FROM it JOIN dead_letters d ON d.id = it.dead_letter_id WHERE it.outcome <> 'pending'),
health AS (
  UPDATE replays
  SET last_settled_at = now(),
      consecutive_failures = CASE WHEN $16::boolean THEN 0 ELSE consecutive_failures END + $17::int,
      last_error = coalesce($18::text, last_error),
      last_error_at = CASE WHEN $18::text IS NULL THEN last_error_at ELSE $19::timestamptz END
  WHERE id = $1::uuid AND EXISTS (SELECT 1 FROM it))
SELECT count(*)::int AS n FROM it`,
};

/** Raw SQL: completes the replay only when nothing is pending or delivering, with its counts, in one statement. */
export const COMPLETE_SQL = `
UPDATE replays r SET status = 'completed', finished_at = now(), worker = NULL, worker_lease_until = NULL
WHERE r.id = $1::uuid AND r.status = 'running'
  AND NOT EXISTS (SELECT 1 FROM replay_items WHERE replay_id = r.id AND outcome IN ('pending', 'delivering'))
RETURNING r.source, r.total,
  (SELECT jsonb_object_agg(outcome, n) FROM (SELECT outcome, count(*)::int AS n FROM replay_items WHERE replay_id = r.id GROUP BY outcome) c) AS counts`;

/** Cancelled replays with items a dead worker left in delivery (their leases lapsed), for the sweep. */
export const CANCELLED_LEFTOVERS_SQL = `
SELECT DISTINCT i.replay_id AS id FROM replay_items i JOIN replays r ON r.id = i.replay_id
WHERE r.status = 'cancelled' AND i.outcome = 'delivering' AND i.lease_until < now() LIMIT 10`;

/** Gives the replay back (paused, cancelled, completed, shutting down), so any instance can drive it next. */
export const RELEASE_REPLAY_SQL = "UPDATE replays SET worker = NULL, worker_lease_until = NULL WHERE id = $1 AND worker = $2";
