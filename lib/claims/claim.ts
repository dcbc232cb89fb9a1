/**
 * Claiming events: one atomic statement, one database round trip per claim and per batch.
 *
 * The statement proposes a fresh key for each distinct event id (expiry = the database's now() + the
 * source's TTL, or the end of the lease if that is later) and lets `ON CONFLICT DO UPDATE` resolve an
 * existing key through keyward_merge_claim() (prisma/migrations/…_init): reclaim an expired key, take over a lapsed lease,
 * count a duplicate, or leave it alone (in flight, payload mismatch). ON CONFLICT DO UPDATE locks the
 * conflicting row even when a concurrent transaction committed it after our snapshot, so there is no
 * read-then-write race and no retry loop. The audit row of every claim is inserted by the same
 * statement: a claim and its audit row commit together or not at all.
 *
 * In partition mode (mode.ts) there is no unique index to conflict on: CLAIM_PARTITIONED_SQL calls
 * keyward_claim_partitioned() (prisma/migrations/…_partition_claim_reach), which takes the same parameters,
 * keeps (source, event_id) unique with an advisory lock per key, and answers the same columns; one event
 * goes to its scalar twin keyward_claim_partitioned_one() (CLAIM_PARTITIONED_ONE_SQL, …_partition_claim_one),
 * which takes the same lock.
 *
 * Raw SQL, prepared once per connection: the hottest statement of all (docs/benchmarks.md: planning alone
 * cost as much as running it; Prisma cannot express ON CONFLICT … DO UPDATE with a merge function).
 * The functions take requests already parsed by the schemas in schema.ts (the route and the CLI parse).
 * Every claim statement answers the database's now() (`db_now`) beside the key's received_at (the first
 * claim of the key as it stands, which a reclaim after expiry renews and a lease takeover keeps): their
 * difference is a duplicate's age on the database clock, which feeds the per-source duplicate-age
 * histogram (lib/metrics/duplicate-ages.ts) with no extra round trip.
 */
import "server-only";
import { randomUUID } from "node:crypto";
import { KeywardError } from "@/lib/errors";
import { query, type PreparedSql } from "@/lib/db/sql";
import { ClaimRow, classifyClaims, dedupeBatch } from "./classify";
import type { ClaimResult, ParsedBatchClaimRequest, ParsedClaimRequest } from "./schema";
import { countClaimOutcomes } from "@/lib/metrics/claim-counts";
import { duplicateAgesOf } from "@/lib/metrics/duplicate-ages";
import { dedupMode, forgetDedupMode, isModeMismatch, type DedupMode } from "./mode";
import { redisFirstLine } from "./redis";
import { database, type Db } from "@/lib/db/transaction";

export const CLAIM_SQL: PreparedSql = { name: "keyward_claim", text: `
WITH input AS MATERIALIZED (
  SELECT i.event_id, i.event_type, i.payload_hash, i.repeats, i.attempt_id, gen_random_uuid() AS token
  FROM unnest($2::text[], $3::text[], $4::text[], $5::int[], $8::text[]) AS i(event_id, event_type, payload_hash, repeats, attempt_id)
),
src AS (SELECT ttl_seconds FROM sources WHERE name = $1),
upserted AS (
  INSERT INTO dedup_keys AS k (source, event_id, event_type, payload_hash, status, claim_token, claim_kind,
                               lease_expires_at, expires_at, duplicate_count, last_duplicate_at, attempt_id)
  SELECT $1, i.event_id, i.event_type, i.payload_hash,
         CASE WHEN $6::int IS NULL THEN 'done' ELSE 'processing' END,
         i.token, 'claimed',
         now() + make_interval(secs => $6::int),
         -- a key never expires while its lease runs (greatest() ignores a NULL lease)
         greatest(now() + make_interval(secs => s.ttl_seconds), now() + make_interval(secs => $6::int)),
         i.repeats, CASE WHEN i.repeats > 0 THEN now() END, i.attempt_id
  FROM input i CROSS JOIN src s
  ORDER BY i.event_id
  ON CONFLICT (source, event_id) DO UPDATE SET
    (event_type, payload_hash, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at,
     duplicate_count, last_duplicate_at, attempt_id, result_status, result_headers, result_body) =
    (SELECT m.event_type, m.payload_hash, m.status, m.claim_token, m.claim_kind, m.lease_expires_at,
            m.received_at, m.expires_at, m.duplicate_count, m.last_duplicate_at, m.attempt_id,
            -- a saved result stays with the claim that saved it, by reference (its bytes are not rewritten)
            CASE WHEN m.claim_token = k.claim_token THEN k.result_status END,
            CASE WHEN m.claim_token = k.claim_token THEN k.result_headers END,
            CASE WHEN m.claim_token = k.claim_token THEN k.result_body END
     FROM keyward_merge_claim(k, excluded) m)
  -- not the saved result's bytes: a batch answers only whether one is saved
  RETURNING k.source, k.event_id, k.event_type, k.payload_hash, k.status, k.claim_token, k.claim_kind, k.lease_expires_at,
            k.received_at, k.expires_at, k.duplicate_count, k.attempt_id, k.result_status
),
joined AS (
  SELECT u.*, u.claim_token = i.token AS claimed_now,
         -- the same attempt again (keyward_merge_claim left the key as that attempt made it); a key stored
         -- without an attempt id is no repeat (with "=" it was NULL: 20261209000000_claim_repeat_without_attempt)
         u.claim_token <> i.token AND i.attempt_id IS NOT NULL AND u.attempt_id IS NOT DISTINCT FROM i.attempt_id
           AND NOT (u.payload_hash IS NOT NULL AND i.payload_hash IS NOT NULL AND u.payload_hash <> i.payload_hash) AS is_repeat
  FROM upserted u JOIN input i USING (event_id)
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT j.source, j.event_id, j.event_type, j.claim_kind, $7,
         jsonb_strip_nulls(jsonb_build_object('expiresAt', j.expires_at, 'leaseExpiresAt', j.lease_expires_at,
                                              'payloadHash', j.payload_hash))
  FROM joined j WHERE j.claimed_now
)
SELECT event_id, status, claim_kind, claimed_now, is_repeat,
       CASE WHEN claimed_now OR is_repeat THEN claim_token END AS claim_token,
       payload_hash, lease_expires_at, received_at, expires_at, duplicate_count, attempt_id, now() AS db_now,
       result_status, NULL::jsonb AS result_headers, NULL::bytea AS result_body
FROM joined` };

/**
 * CLAIM_SQL for exactly one event, the common case: the same decisions and answer columns without the
 * unnest, the materialised input and the join back to it. The proposed claim token comes from the caller
 * ($9, a random UUID), so the row tells whether this statement's proposal won without a join. The sender's
 * TTL is joined in the INSERT's own SELECT: an unknown source inserts and answers nothing. Measured against
 * CLAIM_SQL for one event: 1.2–1.3× the claims per second at 8 clients, on a par with the design's minimal
 * claim (docs/benchmarks.md).
 */
export const CLAIM_ONE_SQL: PreparedSql = { name: "keyward_claim_one", text: `
WITH upserted AS (
  INSERT INTO dedup_keys AS k (source, event_id, event_type, payload_hash, status, claim_token, claim_kind,
                               lease_expires_at, expires_at, duplicate_count, last_duplicate_at, attempt_id)
  SELECT $1, $2, $3, $4,
         CASE WHEN $6::int IS NULL THEN 'done' ELSE 'processing' END,
         $9::uuid, 'claimed',
         now() + make_interval(secs => $6::int),
         -- a key never expires while its lease runs (greatest() ignores a NULL lease)
         greatest(now() + make_interval(secs => s.ttl_seconds), now() + make_interval(secs => $6::int)),
         $5::int, CASE WHEN $5::int > 0 THEN now() END, $8
  FROM sources s WHERE s.name = $1
  ON CONFLICT (source, event_id) DO UPDATE SET
    (event_type, payload_hash, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at,
     duplicate_count, last_duplicate_at, attempt_id, result_status, result_headers, result_body) =
    (SELECT m.event_type, m.payload_hash, m.status, m.claim_token, m.claim_kind, m.lease_expires_at,
            m.received_at, m.expires_at, m.duplicate_count, m.last_duplicate_at, m.attempt_id,
            -- a saved result stays with the claim that saved it, by reference (its bytes are not rewritten)
            CASE WHEN m.claim_token = k.claim_token THEN k.result_status END,
            CASE WHEN m.claim_token = k.claim_token THEN k.result_headers END,
            CASE WHEN m.claim_token = k.claim_token THEN k.result_body END
     FROM keyward_merge_claim(k, excluded) m)
  RETURNING k.*, k.claim_token = $9::uuid AS claimed_now
),
answered AS (
  SELECT u.*,
         -- the same attempt again (keyward_merge_claim left the key as that attempt made it); a key stored
         -- without an attempt id is no repeat (with "=" it was NULL: 20261209000000_claim_repeat_without_attempt)
         NOT u.claimed_now AND $8::text IS NOT NULL AND u.attempt_id IS NOT DISTINCT FROM $8
           AND NOT (u.payload_hash IS NOT NULL AND $4::text IS NOT NULL AND u.payload_hash <> $4) AS is_repeat
  FROM upserted u
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT a.source, a.event_id, a.event_type, a.claim_kind, $7,
         jsonb_strip_nulls(jsonb_build_object('expiresAt', a.expires_at, 'leaseExpiresAt', a.lease_expires_at,
                                              'payloadHash', a.payload_hash))
  FROM answered a WHERE a.claimed_now
)
SELECT event_id, status, claim_kind, claimed_now, is_repeat,
       CASE WHEN claimed_now OR is_repeat THEN claim_token END AS claim_token,
       payload_hash, lease_expires_at, received_at, expires_at, duplicate_count, attempt_id, now() AS db_now,
       result_status, result_headers, result_body
FROM answered` };

/** The claim statement of partition mode: CLAIM_SQL's parameters and answer columns, one round trip. */
export const CLAIM_PARTITIONED_SQL: PreparedSql = {
  name: "keyward_claim_partitioned",
  text: "SELECT * FROM keyward_claim_partitioned($1, $2::text[], $3::text[], $4::text[], $5::int[], $6::int, $7, $8::text[])",
};

/**
 * The claim statement of partition mode for exactly one event: keyward_claim_partitioned_one()
 * (prisma/migrations/…_partition_claim_one), the array version's decisions and answer columns with scalar
 * parameters, the same key lock. CLAIM_ONE_SQL's parameters but the ninth (its token is drawn inside).
 * Against the array version called with one event (bench/partition-cpu.ts, 8 clients): 7–21 % less
 * PostgreSQL CPU per first claim, 46–68 % less per duplicate, and its probe is an equality on the key,
 * which PostgreSQL always plans as an index condition (the array version's `= ANY` can end up a filter).
 */
export const CLAIM_PARTITIONED_ONE_SQL: PreparedSql = {
  name: "keyward_claim_partitioned_one",
  text: "SELECT * FROM keyward_claim_partitioned_one($1, $2, $3, $4, $5::int, $6::int, $7, $8)",
};

export type ClaimOptions = {
  /** Who claims, recorded in the audit history (an API key's name, or "library"). */
  actor?: string;
};

/** CLAIM_SQL's (and CLAIM_PARTITIONED_SQL's) parameters, in order. */
export function claimStatementParams(
  source: string,
  distinct: readonly { first: { eventId: string; eventType: string; payloadHash?: string; attemptId?: string }; repeats: number }[],
  leaseSeconds: number | null,
  actor: string,
): unknown[] {
  return [
    source,
    distinct.map((d) => d.first.eventId),
    distinct.map((d) => d.first.eventType),
    distinct.map((d) => d.first.payloadHash ?? null),
    distinct.map((d) => d.repeats),
    leaseSeconds,
    actor,
    distinct.map((d) => d.first.attemptId ?? null),
  ];
}

type Distinct = readonly { first: { eventId: string; eventType: string; payloadHash?: string; attemptId?: string }; repeats: number }[];

/**
 * The statement and parameters the library sends for these distinct events (the benchmark sends exactly
 * these): in single-table mode CLAIM_ONE_SQL for one event, CLAIM_SQL for more; in partition mode
 * CLAIM_PARTITIONED_ONE_SQL for one event, CLAIM_PARTITIONED_SQL for more. All answer the same columns;
 * `received_at` of a duplicate is the existing key's first claim time.
 */
export function claimStatement(
  source: string,
  distinct: Distinct,
  leaseSeconds: number | null,
  actor: string,
  mode: DedupMode = "single",
): { sql: PreparedSql; params: unknown[] } {
  if (distinct.length !== 1) {
    return { sql: mode === "partition" ? CLAIM_PARTITIONED_SQL : CLAIM_SQL, params: claimStatementParams(source, distinct, leaseSeconds, actor) };
  }
  const [{ first, repeats }] = distinct;
  const params = [source, first.eventId, first.eventType, first.payloadHash ?? null, repeats, leaseSeconds, actor, first.attemptId ?? null];
  if (mode === "partition") return { sql: CLAIM_PARTITIONED_ONE_SQL, params };
  return { sql: CLAIM_ONE_SQL, params: [...params, randomUUID()] };
}

async function runClaim(
  source: string,
  events: { eventId: string; eventType: string; payloadHash?: string; attemptId?: string }[],
  leaseSeconds: number | undefined,
  options: ClaimOptions,
  db: Db,
): Promise<ClaimResult[]> {
  // A handle of the caller's own (a withTransaction handle, or connectionDb() on a pg client in the caller's
  // transaction): no Redis, and nothing counted, since whether the claim commits is the caller's to decide.
  const own = db !== database();
  // 1. Redis first (only in `keyward start` with KEYWARD_REDIS_URL, never on a caller's own handle): the
  //    events it answers `duplicate` for; the rest go to PostgreSQL (redis.ts has why this is safe).
  const line = own ? undefined : await redisFirstLine(source, events);
  // 2. The statement, for everything Redis did not answer.
  const { results: fromDatabase, rows } = await claimInDatabase(source, line ? line.toDatabase : events, leaseSeconds, options, db, own);
  // A duplicate's age (database now() − the key's first claim) goes into the source's duplicate-age
  // histogram: from the statement's rows here, for Redis's answers from their entries (step 3).
  const ages = duplicateAgesOf(fromDatabase, rows);
  // 3. A note to Redis: the answers merged in input order, the `done` keys remembered (in the background),
  //    the source's duplicate share updated.
  const results = line ? line.after(fromDatabase, rows, ages) : fromDatabase;
  // 4. Counted, unless the caller decides whether it commits (a repeat is the answer of a claim already counted).
  if (!own) countClaimOutcomes(source, results.filter((r) => !r.repeat).map((r) => r.outcome), ages);
  return results;
}

/** The claim statement for `events` (none: no statement), with its rows and their answers in order. */
async function claimInDatabase(
  source: string,
  events: { eventId: string; eventType: string; payloadHash?: string; attemptId?: string }[],
  leaseSeconds: number | undefined,
  options: ClaimOptions,
  db: Db,
  own: boolean,
): Promise<{ results: ClaimResult[]; rows: ClaimRow[] }> {
  if (events.length === 0) return { results: [], rows: [] };
  const distinct = dedupeBatch(events);
  const actor = options.actor ?? "library";
  const statement = async () => {
    const { sql, params } = claimStatement(source, distinct, leaseSeconds ?? null, actor, await dedupMode());
    return query(ClaimRow, sql, params, db);
  };
  let rows: ClaimRow[];
  try {
    rows = await statement();
  } catch (err) {
    // The table was switched to partition mode under this running process: re-read the mode, retry once
    // (the failed statement changed nothing). Inside a caller's transaction the error aborted it: rethrow.
    if (!isModeMismatch(err)) throw err;
    forgetDedupMode();
    if (own) throw err;
    rows = await statement();
  }
  if (rows.length === 0) throw unknownSource(source);
  return { results: classifyClaims(source, events, rows), rows };
}

export function unknownSource(source: string): KeywardError {
  return KeywardError.unprocessable(
    "unknown_source",
    `unknown source "${source}": create it first with a deliberate TTL, e.g. ` +
      `\`keyward source create ${source} --retry-window 3d --queue-lag 1d --clock-skew 5m --replay 3d\``,
    { field: "source" },
  );
}

/**
 * Claims one event (a request parsed by `claimRequest`). Resolves with the outcome; throws KeywardError
 * for an unknown source.
 */
export async function claimEvent(r: ParsedClaimRequest, options: ClaimOptions = {}, db: Db = database()): Promise<ClaimResult> {
  const [result] = await runClaim(r.source, [r], r.leaseSeconds, options, db);
  return result;
}

/** Claims up to 1000 events of one source (parsed by `batchClaimRequest`) in one statement; results in input order. */
export async function claimEvents(r: ParsedBatchClaimRequest, options: ClaimOptions = {}, db: Db = database()): Promise<ClaimResult[]> {
  // A batch-level attemptId stands for every event that does not carry its own.
  const events = r.attemptId ? r.events.map((e) => ({ ...e, attemptId: e.attemptId ?? r.attemptId })) : r.events;
  const results = await runClaim(r.source, events, r.leaseSeconds, options, db);
  // A batch says that a result is saved, never the result (one distinct event goes to CLAIM_ONE_SQL, which reads it).
  for (const res of results) {
    if (res.result) {
      delete res.result;
      res.resultSaved = true;
    }
  }
  return results;
}
