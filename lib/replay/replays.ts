/**
 * Replays: starting one from a preflight (idempotent on the Idempotency-Key header, refused when the
 * preflight is stale, when `expiring` items are included without an extend, when `expired_processed`
 * items are included without a reason, or when `in_flight` items are included), reading them, and
 * pausing, resuming and cancelling them. The executor (executor.ts) does the deliveries. Every state
 * change is recorded in the operator action log in the same transaction.
 */
import "server-only";
import { z } from "zod";
import { query, execute, sqlParams } from "@/lib/db/sql";
import { createHash } from "node:crypto";
import { KeywardError } from "@/lib/errors";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { pageOf, type Page } from "@/lib/pagination";
import { recordAction } from "@/lib/audit/actions";
import { actorOf, type Principal } from "@/lib/auth/principal";
import { replayTarget } from "@/lib/sources/signing-secret";
import { staleError } from "./preflight";
import { wakeReplayWorkers } from "./wake";
import { dueAtSql, replayHealth } from "./health";
import { outcomeCondition, replayOutcome, STATE_STATUSES } from "./outcome";
import type { RetrySchedule } from "./backoff";
import { loadEnv } from "@/lib/config/env";
import {
  CATEGORIES,
  OUTCOMES,
  REPLAY_STATUSES,
  type Category,
  type ListReplaysQuery,
  type Outcome,
  type Replay,
  type ReplayItemResult,
  type ReplayRequest,
  type ReplayStatus,
  type ReplaySummary,
} from "./schema";

/** Transactions of many rows: longer bounds than Prisma's defaults (2 s to get a connection, 5 s in all). */
const TX = { timeout: 30_000, maxWait: 10_000 };

/** A start request's retry schedule, each field left out taking the deployment's default (KEYWARD_REPLAY_RETRY_*). */
export function retryScheduleOf(retry: ReplayRequest["retry"]): RetrySchedule {
  const env = loadEnv();
  const initialDelayMs = retry?.initialDelaySeconds !== undefined ? Math.round(retry.initialDelaySeconds * 1000) : env.KEYWARD_REPLAY_RETRY_INITIAL_MS;
  const maxDelayMs = retry?.maxDelaySeconds !== undefined ? Math.round(retry.maxDelaySeconds * 1000) : env.KEYWARD_REPLAY_RETRY_MAX_DELAY_MS;
  if (maxDelayMs < initialDelayMs) {
    throw KeywardError.unprocessable("invalid_retry_schedule", `retry.maxDelaySeconds (${maxDelayMs / 1000}) must not be below the first wait (${initialDelayMs / 1000} s)`, {
      fields: [{ field: "retry.maxDelaySeconds", message: `must be at least ${initialDelayMs / 1000}` }],
    });
  }
  return { maxAttempts: retry?.maxAttempts ?? env.KEYWARD_REPLAY_RETRY_MAX_ATTEMPTS, initialDelayMs, maxDelayMs };
}

/** What makes two requests "the same" for the Idempotency-Key: the parsed body with its defaults, include as a set. */
export function requestHash(r: ReplayRequest): string {
  const canonical = {
    preflightId: r.preflightId.toLowerCase(),
    include: [...new Set(r.include)].sort(),
    force: r.force?.reason ?? null,
    ratePerSecond: r.ratePerSecond,
    concurrency: r.concurrency,
    retry: r.retry ?? null,
  };
  return createHash("sha256").update(JSON.stringify(canonical)).digest("hex");
}

/**
 * Starts a replay. Resolves `{ replayId, total, created }`; `created` is false when the same
 * Idempotency-Key was used before with the same body (the earlier replay's id is returned).
 */
export async function startReplay(
  r: ReplayRequest,
  idemKey: string,
  actor: Principal,
  db: Db = database(),
): Promise<{ replayId: string; total: number; created: boolean }> {
  const choice = replayChoice(r);
  const hash = requestHash(r);

  // Outside the transaction, so it holds no connection while it reads. 409 when the source has no destination or no readable signing secret
  // (checked once more, with the source the locked preflight names, below).
  const pre = await db.prisma.replayPreflight.findUnique({ where: { id: r.preflightId }, select: { source: true } });
  const started = (await db.prisma.replay.count({ where: { idempotencyKey: idemKey } })) > 0;
  if (pre && !started) await replayTarget(pre.source, db);

  const outcome = await withTransaction(async (tx) => {
    const existing = await replayOfKey(idemKey, hash, tx);
    if (existing) return { replayId: existing.id, total: existing.total, created: false };
    const pf = await lockPreflightToStart(r.preflightId, choice.include, tx);
    if (pf.source !== pre?.source || started) {
      throw KeywardError.conflict("preflight_changed", "the preflight changed while the replay was being started; retry");
    }
    const created = await tx.prisma.replay.create({
      data: {
        source: pf.source,
        preflightId: pf.id,
        include: choice.include,
        forced: choice.forced,
        forceReason: choice.forced ? r.force!.reason : null,
        ratePerSecond: r.ratePerSecond,
        concurrency: r.concurrency,
        retryMaxAttempts: choice.schedule.maxAttempts,
        retryInitialMs: choice.schedule.initialDelayMs,
        retryMaxDelayMs: choice.schedule.maxDelayMs,
        createdBy: actorOf(actor),
        total: 0,
        idempotencyKey: idemKey,
        requestHash: hash,
      },
    });
    const taken = await takeReplayItems(pf.id, choice.include, created.id, tx);
    const total = taken.reduce((s, t) => s + t.n, 0);
    await tx.prisma.replay.update({ where: { id: created.id }, data: { total } });
    await recordAction(
      actor,
      {
        action: "replay.start",
        target: { type: "replay", id: created.id },
        source: pf.source,
        reason: choice.forced ? r.force!.reason : undefined,
        after: {
          preflightId: pf.id,
          include: choice.include,
          total,
          byCategory: Object.fromEntries(taken.map((t) => [t.category, t.n])),
          forced: choice.forced,
          ratePerSecond: r.ratePerSecond,
          concurrency: r.concurrency,
          retry: choice.schedule,
        },
      },
      tx,
    );
    return { replayId: created.id, total, created: true };
  }, { ...TX, db });
  if (outcome.created) wakeReplayWorkers();
  return outcome;
}

/**
 * What a replay request chooses, checked: the categories (never in_flight), whether it forces
 * expired_processed items (only with a reason), and its retry schedule. Pure.
 */
function replayChoice(r: ReplayRequest): { include: Category[]; forced: boolean; schedule: RetrySchedule } {
  const include = [...new Set(r.include)] as Category[];
  if (include.includes("in_flight")) {
    throw KeywardError.unprocessable("in_flight_not_replayable", "in_flight items are never replayed: their handler is working on them; wait and run a new preflight", {
      fields: [{ field: "include", message: "must not contain in_flight" }],
    });
  }
  const forced = include.includes("expired_processed");
  if (forced && !r.force) {
    throw KeywardError.unprocessable(
      "force_required",
      "expired_processed items would be processed a second time: leave them out, or send force.reason saying why this is acceptable",
      { fields: [{ field: "force.reason", message: "is required when include contains expired_processed" }] },
    );
  }
  return { include, forced, schedule: retryScheduleOf(r.retry) };
}

/**
 * The idempotency of a start: the replay already started with this Idempotency-Key (the same request: its
 * row; another request: 422), or null. One start per key at a time: the second of two concurrent requests
 * waits on the lock, then finds the first.
 */
async function replayOfKey(idemKey: string, hash: string, tx: Db): Promise<{ id: string; total: number } | null> {
  // Raw SQL: a transaction-scoped advisory lock, which Prisma has no call for.
  await execute("SELECT pg_advisory_xact_lock(hashtext('keyward-replay-idempotency:' || $1))", [idemKey], tx);
  const existing = await tx.prisma.replay.findUnique({ where: { idempotencyKey: idemKey } });
  if (existing && existing.requestHash !== hash) {
    throw KeywardError.unprocessable(
      "idempotency_key_reused",
      "this Idempotency-Key was used for a different replay request; use a new key for a new request",
      { replayId: existing.id },
    );
  }
  return existing;
}

/** The preflight, locked for the start: 404 when missing, 409 when stale or when its expiring items need an extend first. */
async function lockPreflightToStart(preflightId: string, include: readonly Category[], tx: Db): Promise<{ id: string; source: string }> {
  // Raw SQL: FOR UPDATE, and staleness by the database clock.
  const [pf] = await query(
    z.object({ id: z.string(), source: z.string(), stale: z.boolean(), valid_until: z.date(), extended_at: z.date().nullable(), expiring: z.number() }),
    `SELECT p.id, p.source, p.valid_until <= now() AS stale, p.valid_until, p.extended_at,
            (SELECT count(*)::int FROM replay_preflight_items i WHERE i.preflight_id = p.id AND i.category = 'expiring') AS expiring
     FROM replay_preflights p WHERE p.id = $1::uuid FOR UPDATE`,
    [preflightId],
    tx,
  );
  if (!pf) throw KeywardError.notFound("preflight_not_found", `no preflight ${preflightId}`);
  if (pf.stale) throw staleError(pf.id, pf.valid_until);
  if (include.includes("expiring") && pf.expiring > 0 && !pf.extended_at) {
    throw KeywardError.conflict(
      "extension_required",
      `${pf.expiring} expiring item(s) would lose their key during the replay: extend the preflight first (POST /api/v1/replays/preflight/${pf.id}/extend), or leave expiring out`,
    );
  }
  return pf;
}

/**
 * Takes the chosen items whose letters are still pending (another replay may have taken some since) into
 * replay `replayId`, holding their letters as `replaying`; 422 when none is left. Per category, how many.
 */
async function takeReplayItems(preflightId: string, include: readonly Category[], replayId: string, tx: Db): Promise<{ category: Category; n: number }[]> {
  // Raw SQL: lock, hold and copy in one CTE.
  const taken = await query(
    z.object({ category: z.enum(CATEGORIES), n: z.number() }),
    `WITH chosen AS (
       SELECT p.dead_letter_id, p.event_id, p.category, p.seq
       FROM replay_preflight_items p JOIN dead_letters d ON d.id = p.dead_letter_id
       WHERE p.preflight_id = $1::uuid AND p.category = ANY($2::text[]) AND d.status = 'pending'
       FOR UPDATE OF d),
     held AS (UPDATE dead_letters d SET status = 'replaying' FROM chosen c WHERE d.id = c.dead_letter_id RETURNING d.id),
     ins AS (
       INSERT INTO replay_items (replay_id, dead_letter_id, seq, event_id, category)
       SELECT $3::uuid, dead_letter_id, seq, event_id, category FROM chosen
       RETURNING category)
     SELECT category, count(*)::int AS n FROM ins GROUP BY category`,
    [preflightId, include, replayId],
    tx,
  );
  if (taken.length === 0) {
    throw KeywardError.unprocessable(
      "nothing_to_replay",
      "the preflight has no pending dead letters in the chosen categories (they may have been replayed since)",
      { fields: [{ field: "include", message: "selects no pending dead letter" }] },
    );
  }
  return taken;
}

const ReplayRow = z.object({
  id: z.string(),
  source: z.string(),
  status: z.enum(REPLAY_STATUSES),
  preflight_id: z.string(),
  include: z.array(z.enum(CATEGORIES)),
  forced: z.boolean(),
  force_reason: z.string().nullable(),
  rate_per_second: z.number(),
  concurrency: z.number(),
  created_by: z.string(),
  created_at: z.date(),
  finished_at: z.date().nullable(),
  total: z.number(),
  destination: z.string().nullable(),
  counts: z.partialRecord(z.enum(OUTCOMES), z.number()).nullable(),
  running_since: z.date(),
  last_settled_at: z.date().nullable(),
  consecutive_failures: z.number(),
  last_error: z.string().nullable(),
  last_error_at: z.date().nullable(),
  retry_max_attempts: z.number(),
  retry_initial_ms: z.number(),
  retry_max_delay_ms: z.number(),
  next_attempt_at: z.date().nullable(),
  due_at: z.date().nullable(),
  db_now: z.date(),
});
type ReplayRow = z.output<typeof ReplayRow>;

/** Raw SQL: the counts by outcome aggregate in the same statement (jsonb_object_agg). */
const SUMMARY_SQL = `
SELECT r.id, r.source, r.status, r.preflight_id, r.include, r.forced, r.force_reason, r.rate_per_second, r.concurrency,
       r.created_by, r.created_at, r.finished_at, r.total, r.destination,
       r.running_since, r.last_settled_at, r.consecutive_failures, r.last_error, r.last_error_at, now() AS db_now,
       r.retry_max_attempts, r.retry_initial_ms, r.retry_max_delay_ms,
       (SELECT min(next_attempt_at) FROM replay_items WHERE replay_id = r.id AND outcome = 'pending' AND attempts > 0) AS next_attempt_at,
       ${dueAtSql("r")},
       (SELECT jsonb_object_agg(outcome, n) FROM (SELECT outcome, count(*)::int AS n FROM replay_items WHERE replay_id = r.id GROUP BY outcome) c) AS counts
FROM replays r`;

function toSummary(r: ReplayRow): ReplaySummary {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, r.counts?.[o] ?? 0])) as Record<Outcome, number>;
  return {
    id: r.id,
    source: r.source,
    status: r.status,
    preflightId: r.preflight_id,
    include: r.include,
    forced: r.forced,
    forceReason: r.force_reason,
    ratePerSecond: r.rate_per_second,
    concurrency: r.concurrency,
    createdBy: r.created_by,
    createdAt: r.created_at.toISOString(),
    finishedAt: r.finished_at?.toISOString() ?? null,
    total: r.total,
    destination: r.destination,
    counts,
    outcome: replayOutcome({ status: r.status, total: r.total, counts }),
    health: replayHealth(
      {
        status: r.status,
        ratePerSecond: r.rate_per_second,
        runningSince: r.running_since,
        lastSettledAt: r.last_settled_at,
        consecutiveFailures: r.consecutive_failures,
        lastError: r.last_error,
        lastErrorAt: r.last_error_at,
        dueAt: r.due_at,
      },
      r.db_now,
      loadEnv().KEYWARD_REPLAY_TIMEOUT_MS,
    ),
    retry: { maxAttempts: r.retry_max_attempts, initialDelaySeconds: r.retry_initial_ms / 1000, maxDelaySeconds: r.retry_max_delay_ms / 1000 },
    nextAttemptAt: r.next_attempt_at?.toISOString() ?? null,
  };
}

const notFound = (id: string) => KeywardError.notFound("replay_not_found", `no replay ${id}`);

export async function getReplaySummary(id: string, db: Db = database()): Promise<ReplaySummary> {
  const [row] = await query(ReplayRow, `${SUMMARY_SQL} WHERE r.id = $1`, [id], db);
  if (!row) throw notFound(id);
  return toSummary(row);
}

type ItemRow = {
  deadLetterId: string;
  eventId: string;
  outcome: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  finishedAt: Date | null;
  nextAttemptAt: Date;
};
const toItem = (i: ItemRow): ReplayItemResult => ({
  ...i,
  outcome: i.outcome as Outcome,
  finishedAt: i.finishedAt?.toISOString() ?? null,
  nextAttemptAt: i.outcome === "pending" ? i.nextAttemptAt.toISOString() : null,
});

/**
 * A replay with its progress, its failures (failed and skipped_unsafe, first 500), its first 500 items and
 * the items waiting for a retry (soonest first, first 500).
 */
export async function getReplay(id: string, db: Db = database()): Promise<Replay> {
  const summary = await getReplaySummary(id, db);
  const select = {
    deadLetterId: true, eventId: true, outcome: true, attempts: true, lastStatus: true, lastError: true, finishedAt: true, nextAttemptAt: true,
  } as const;
  const [failures, items, waiting] = await Promise.all([
    db.prisma.replayItem.findMany({ where: { replayId: id, outcome: { in: ["failed", "skipped_unsafe"] } }, orderBy: { seq: "asc" }, take: 500, select }),
    db.prisma.replayItem.findMany({ where: { replayId: id }, orderBy: { seq: "asc" }, take: 500, select }),
    db.prisma.replayItem.findMany({ where: { replayId: id, outcome: "pending", attempts: { gt: 0 } }, orderBy: [{ nextAttemptAt: "asc" }, { seq: "asc" }], take: 500, select }),
  ]);
  return { ...summary, failures: failures.map(toItem), items: items.map(toItem), waiting: waiting.map(toItem) };
}

/**
 * "Retry now" for an item waiting for its retry: its next attempt becomes due at once (the executor takes
 * it within a poll; this process's worker is woken). 404 for an unknown replay or item; 409 when the item
 * is not waiting (delivered, failed, in delivery, or never attempted) or the replay is not running.
 * Recorded in the action log.
 */
export async function retryItemNow(id: string, deadLetterId: string, actor: Principal, db: Db = database()): Promise<ReplayItemResult> {
  const item = await withTransaction(async (tx) => {
    // Raw SQL: FOR UPDATE orders this with the executor's lease of the item; due by the database clock.
    const [row] = await query(
      z.object({ status: z.enum(REPLAY_STATUSES), source: z.string(), outcome: z.string(), attempts: z.number(), next_attempt_at: z.date() }),
      `SELECT r.status, r.source, i.outcome, i.attempts, i.next_attempt_at FROM replays r
       JOIN replay_items i ON i.replay_id = r.id AND i.dead_letter_id = $2::uuid WHERE r.id = $1::uuid FOR UPDATE OF i`,
      [id, deadLetterId],
      tx,
    );
    if (!row) {
      const [r] = await query(z.object({}), "SELECT 1 FROM replays WHERE id = $1::uuid", [id], tx);
      throw r ? KeywardError.notFound("replay_item_not_found", `no item ${deadLetterId} in replay ${id}`) : notFound(id);
    }
    if (row.outcome !== "pending" || row.attempts === 0) {
      throw KeywardError.conflict("not_waiting", `item ${deadLetterId} is not waiting for a retry (it is ${row.outcome === "pending" ? "not attempted yet" : row.outcome})`);
    }
    if (row.status !== "running") throw KeywardError.conflict("invalid_state", `replay ${id} is ${row.status}: resume it first`);
    await execute("UPDATE replay_items SET next_attempt_at = now() WHERE replay_id = $1::uuid AND dead_letter_id = $2::uuid", [id, deadLetterId], tx);
    await recordAction(
      actor,
      {
        action: "replay.retry_now",
        target: { type: "replay", id },
        source: row.source,
        before: { deadLetterId, nextAttemptAt: row.next_attempt_at.toISOString(), attempts: row.attempts },
        after: { deadLetterId, due: "now" },
      },
      tx,
    );
    const select = {
      deadLetterId: true, eventId: true, outcome: true, attempts: true, lastStatus: true, lastError: true, finishedAt: true, nextAttemptAt: true,
    } as const;
    return tx.prisma.replayItem.findUniqueOrThrow({ where: { replayId_deadLetterId: { replayId: id, deadLetterId } }, select });
  }, { ...TX, db });
  wakeReplayWorkers();
  return toItem(item);
}

/** Newest first, keyset-paginated on (created_at, id); filtered by source, status, state (running/finished) and outcome. */
export async function listReplays(q: ListReplaysQuery, db: Db = database()): Promise<Page<ReplaySummary>> {
  const { values, p } = sqlParams();
  const where: string[] = [];
  if (q.source) where.push(`r.source = ${p(q.source)}`);
  if (q.status) where.push(`r.status = ${p(q.status)}`);
  if (q.state) where.push(`r.status = ANY(${p(STATE_STATUSES[q.state])}::text[])`);
  if (q.outcome) where.push(outcomeCondition(q.outcome, "(SELECT count(*) FROM replay_items WHERE replay_id = r.id AND outcome = 'delivered')"));
  // created_at has microseconds, the cursor milliseconds: the row's own created_at is compared at ms.
  if (q.cursor) where.push(`(date_trunc('milliseconds', r.created_at), r.id) < (${p(q.cursor.at)}::timestamptz, ${p(q.cursor.id)}::uuid)`);
  const rows = await query(
    ReplayRow,
    `${SUMMARY_SQL} ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
     ORDER BY date_trunc('milliseconds', r.created_at) DESC, r.id DESC LIMIT ${p(q.limit + 1)}`,
    values,
    db,
  );
  return pageOf(rows, q.limit, toSummary, (last) => ({ at: last.created_at.toISOString(), id: last.id }));
}

const TRANSITIONS: Record<"pause" | "resume" | "cancel", { from: ReplayStatus[]; to: ReplayStatus }> = {
  pause: { from: ["running"], to: "paused" },
  resume: { from: ["paused"], to: "running" },
  cancel: { from: ["running", "paused"], to: "cancelled" },
};

/**
 * Pauses, resumes or cancels a replay; 409 when its state does not allow it. The executor notices before
 * its next batch. Cancel also settles every item not being delivered right now as `cancelled` (its dead
 * letter back to pending, an audit `replayed` row each); items in delivery finish their attempt.
 */
export async function changeReplay(
  id: string,
  action: keyof typeof TRANSITIONS,
  actor: Principal,
  db: Db = database(),
): Promise<ReplaySummary> {
  const t = TRANSITIONS[action];
  await withTransaction(async (tx) => {
    // Raw SQL: Prisma has no FOR UPDATE; the lock orders this change with the executor's.
    const [row] = await query(z.object({ status: z.enum(REPLAY_STATUSES), source: z.string() }), "SELECT status, source FROM replays WHERE id = $1::uuid FOR UPDATE", [id], tx);
    if (!row) throw notFound(id);
    if (!t.from.includes(row.status)) {
      throw KeywardError.conflict("invalid_state", `cannot ${action} a ${row.status} replay (only ${t.from.join(" or ")})`);
    }
    // Raw SQL: finished by the database clock, like every time the executor writes. A resume starts the
    // health clock again: a paused time is no stall, earlier failures no streak.
    await execute(
      `UPDATE replays SET status = $2, finished_at = CASE WHEN $2 = 'cancelled' THEN now() END,
              running_since = CASE WHEN $2 = 'running' THEN now() ELSE running_since END,
              consecutive_failures = CASE WHEN $2 = 'running' THEN 0 ELSE consecutive_failures END
       WHERE id = $1::uuid`,
      [id, t.to],
      tx,
    );
    let cancelledItems = 0;
    if (action === "cancel") {
      const [{ n }] = await query(z.object({ n: z.number() }), `${CANCEL_ITEMS_SQL} SELECT count(*)::int AS n FROM it`, [id, actorOf(actor)], tx);
      cancelledItems = n;
    }
    await recordAction(
      actor,
      {
        action: `replay.${action}`,
        target: { type: "replay", id },
        source: row.source,
        before: { status: row.status },
        after: { status: t.to, ...(action === "cancel" ? { cancelledItems } : {}) },
      },
      tx,
    );
  }, { ...TX, db });
  if (action === "resume") wakeReplayWorkers();
  return getReplaySummary(id, db);
}

/**
 * Settles a cancelled replay's items that no worker is delivering (pending, or delivering with a lapsed
 * lease) as cancelled: their dead letters go back to pending, each gets an audit `replayed` row.
 * $1 = replay id, $2 = actor. Used by cancel and by the executor's sweep (a replay-worker statement:
 * raw SQL, one CTE for the three writes).
 */
export const CANCEL_ITEMS_SQL = `
WITH it AS (
  UPDATE replay_items i SET outcome = 'cancelled', finished_at = now(), lease_until = NULL, leased_by = NULL
  WHERE i.replay_id = $1::uuid AND (i.outcome = 'pending' OR (i.outcome = 'delivering' AND i.lease_until < now()))
  RETURNING i.replay_id, i.dead_letter_id, i.attempts),
dl AS (
  UPDATE dead_letters d SET status = 'pending' FROM it WHERE d.id = it.dead_letter_id AND d.status = 'replaying'),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT d.source, d.event_id, d.event_type, 'replayed', $2,
         jsonb_build_object('replayId', it.replay_id, 'deadLetterId', it.dead_letter_id, 'outcome', 'cancelled', 'attempts', it.attempts)
  FROM it JOIN dead_letters d ON d.id = it.dead_letter_id)`;
