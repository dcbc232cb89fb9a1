/**
 * Replays: starting one from a preflight (idempotent on the Idempotency-Key header, refused when the
 * preflight is stale, when `expiring` items are included without an extend, when `expired_processed`
 * items are included without a reason, or when `in_flight` items are included), reading them, and
 * pausing, resuming and cancelling them. The executor (executor.ts) does the deliveries. Every state
 * change is recorded in the operator action log in the same transaction.
 */
import "server-only";
import { createHash } from "node:crypto";
import { KeywardError } from "../errors";
import { database, withTransaction, type Db } from "../db/transaction";
import { pageOf, type Page } from "../pagination";
import { recordAction } from "../audit/actions";
import { actorOf, type Principal } from "../auth/principal";
import { UUID_RE } from "../deadletters/list";
import { replayTarget } from "../sources/signing-secret";
import { staleError } from "./preflight";
import { wakeReplayWorkers } from "./wake";
import { replayHealth } from "./health";
import { loadEnv } from "../config/env";
import {
  OUTCOMES,
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

/** What makes two requests "the same" for the Idempotency-Key: the parsed body with its defaults, include as a set. */
export function requestHash(r: ReplayRequest): string {
  const canonical = {
    preflightId: r.preflightId.toLowerCase(),
    include: [...new Set(r.include)].sort(),
    force: r.force?.reason ?? null,
    ratePerSecond: r.ratePerSecond,
    concurrency: r.concurrency,
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
  const hash = requestHash(r);
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

  // Outside the transaction: on the embedded PGlite a query on another connection inside it would wait
  // for the transaction itself. 409 when the source has no destination or no readable signing secret
  // (checked once more, with the source the locked preflight names, below).
  const pre = await db.prisma.replayPreflight.findUnique({ where: { id: r.preflightId }, select: { source: true } });
  const started = (await db.prisma.replay.count({ where: { idempotencyKey: idemKey } })) > 0;
  if (pre && !started) await replayTarget(pre.source, db);

  const outcome = await withTransaction(async (tx) => {
    // One start per key at a time: the second of two concurrent requests waits here, then finds the first.
    // Raw SQL: a transaction-scoped advisory lock, which Prisma has no call for.
    await tx.execute("SELECT pg_advisory_xact_lock(hashtext('keyward-replay-idempotency:' || $1))", [idemKey]);
    const existing = await tx.prisma.replay.findUnique({ where: { idempotencyKey: idemKey } });
    if (existing) {
      if (existing.requestHash !== hash) {
        throw KeywardError.unprocessable(
          "idempotency_key_reused",
          "this Idempotency-Key was used for a different replay request; use a new key for a new request",
          { replayId: existing.id },
        );
      }
      return { replayId: existing.id, total: existing.total, created: false };
    }
    // Raw SQL: FOR UPDATE, and staleness by the database clock.
    const [pf] = await tx.query<{ id: string; source: string; stale: boolean; valid_until: Date; extended_at: Date | null; expiring: number }>(
      `SELECT p.id, p.source, p.valid_until <= now() AS stale, p.valid_until, p.extended_at,
              (SELECT count(*)::int FROM replay_preflight_items i WHERE i.preflight_id = p.id AND i.category = 'expiring') AS expiring
       FROM replay_preflights p WHERE p.id = $1::uuid FOR UPDATE`,
      [r.preflightId],
    );
    if (!pf) throw KeywardError.notFound("preflight_not_found", `no preflight ${r.preflightId}`);
    if (pf.stale) throw staleError(pf.id, pf.valid_until);
    if (include.includes("expiring") && pf.expiring > 0 && !pf.extended_at) {
      throw KeywardError.conflict(
        "extension_required",
        `${pf.expiring} expiring item(s) would lose their key during the replay: extend the preflight first (POST /api/v1/replays/preflight/${pf.id}/extend), or leave expiring out`,
      );
    }
    if (pf.source !== pre?.source || started) {
      throw KeywardError.conflict("preflight_changed", "the preflight changed while the replay was being started; retry");
    }

    const created = await tx.prisma.replay.create({
      data: {
        source: pf.source,
        preflightId: pf.id,
        include,
        forced,
        forceReason: forced ? r.force!.reason : null,
        ratePerSecond: r.ratePerSecond,
        concurrency: r.concurrency,
        createdBy: actorOf(actor),
        total: 0,
        idempotencyKey: idemKey,
        requestHash: hash,
      },
    });
    // Take the chosen items whose letters are still pending (another replay may have taken some since).
    // Raw SQL: lock, hold and copy in one CTE.
    const taken = await tx.query<{ category: Category; n: number }>(
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
      [pf.id, include, created.id],
    );
    const total = taken.reduce((s, t) => s + t.n, 0);
    if (total === 0) {
      throw KeywardError.unprocessable(
        "nothing_to_replay",
        "the preflight has no pending dead letters in the chosen categories (they may have been replayed since)",
        { fields: [{ field: "include", message: "selects no pending dead letter" }] },
      );
    }
    await tx.prisma.replay.update({ where: { id: created.id }, data: { total } });
    await recordAction(
      actor,
      {
        action: "replay.start",
        target: { type: "replay", id: created.id },
        source: pf.source,
        reason: forced ? r.force!.reason : undefined,
        after: {
          preflightId: pf.id,
          include,
          total,
          byCategory: Object.fromEntries(taken.map((t) => [t.category, t.n])),
          forced,
          ratePerSecond: r.ratePerSecond,
          concurrency: r.concurrency,
        },
      },
      tx,
    );
    return { replayId: created.id, total, created: true };
  }, { ...TX, db });
  if (outcome.created) wakeReplayWorkers();
  return outcome;
}

type ReplayRow = {
  id: string;
  source: string;
  status: ReplayStatus;
  preflight_id: string;
  include: Category[];
  forced: boolean;
  force_reason: string | null;
  rate_per_second: number;
  concurrency: number;
  created_by: string;
  created_at: Date;
  finished_at: Date | null;
  total: number;
  destination: string | null;
  counts: Partial<Record<Outcome, number>> | null;
  running_since: Date;
  last_settled_at: Date | null;
  consecutive_failures: number;
  last_error: string | null;
  last_error_at: Date | null;
  db_now: Date;
};

/** Raw SQL: the counts by outcome aggregate in the same statement (jsonb_object_agg). */
const SUMMARY_SQL = `
SELECT r.id, r.source, r.status, r.preflight_id, r.include, r.forced, r.force_reason, r.rate_per_second, r.concurrency,
       r.created_by, r.created_at, r.finished_at, r.total, r.destination,
       r.running_since, r.last_settled_at, r.consecutive_failures, r.last_error, r.last_error_at, now() AS db_now,
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
    health: replayHealth(
      {
        status: r.status,
        ratePerSecond: r.rate_per_second,
        runningSince: r.running_since,
        lastSettledAt: r.last_settled_at,
        consecutiveFailures: r.consecutive_failures,
        lastError: r.last_error,
        lastErrorAt: r.last_error_at,
      },
      r.db_now,
      loadEnv().KEYWARD_REPLAY_TIMEOUT_MS,
    ),
  };
}

const notFound = (id: string) => KeywardError.notFound("replay_not_found", `no replay ${id}`);

export async function getReplaySummary(id: string, db: Db = database()): Promise<ReplaySummary> {
  if (!UUID_RE.test(id)) throw notFound(id);
  const [row] = await db.query<ReplayRow>(`${SUMMARY_SQL} WHERE r.id = $1`, [id]);
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
};
const toItem = (i: ItemRow): ReplayItemResult => ({ ...i, outcome: i.outcome as Outcome, finishedAt: i.finishedAt?.toISOString() ?? null });

/** A replay with its progress, its failures (failed and skipped_unsafe, first 500) and its first 500 items. */
export async function getReplay(id: string, db: Db = database()): Promise<Replay> {
  const summary = await getReplaySummary(id, db);
  const select = { deadLetterId: true, eventId: true, outcome: true, attempts: true, lastStatus: true, lastError: true, finishedAt: true } as const;
  const [failures, items] = await Promise.all([
    db.prisma.replayItem.findMany({ where: { replayId: id, outcome: { in: ["failed", "skipped_unsafe"] } }, orderBy: { seq: "asc" }, take: 500, select }),
    db.prisma.replayItem.findMany({ where: { replayId: id }, orderBy: { seq: "asc" }, take: 500, select }),
  ]);
  return { ...summary, failures: failures.map(toItem), items: items.map(toItem) };
}

/** Newest first, keyset-paginated on (created_at, id). */
export async function listReplays(q: ListReplaysQuery, db: Db = database()): Promise<Page<ReplaySummary>> {
  const values: unknown[] = [];
  const p = (v: unknown) => `$${values.push(v)}`;
  const where: string[] = [];
  if (q.source) where.push(`r.source = ${p(q.source)}`);
  if (q.status) where.push(`r.status = ${p(q.status)}`);
  // created_at has microseconds, the cursor milliseconds: the row's own created_at is compared at ms.
  if (q.cursor) where.push(`(date_trunc('milliseconds', r.created_at), r.id) < (${p(q.cursor.at)}::timestamptz, ${p(q.cursor.id)}::uuid)`);
  const rows = await db.query<ReplayRow>(
    `${SUMMARY_SQL} ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
     ORDER BY date_trunc('milliseconds', r.created_at) DESC, r.id DESC LIMIT ${p(q.limit + 1)}`,
    values,
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
  if (!UUID_RE.test(id)) throw notFound(id);
  const t = TRANSITIONS[action];
  await withTransaction(async (tx) => {
    // Raw SQL: Prisma has no FOR UPDATE; the lock orders this change with the executor's.
    const [row] = await tx.query<{ status: ReplayStatus; source: string }>("SELECT status, source FROM replays WHERE id = $1::uuid FOR UPDATE", [id]);
    if (!row) throw notFound(id);
    if (!t.from.includes(row.status)) {
      throw KeywardError.conflict("invalid_state", `cannot ${action} a ${row.status} replay (only ${t.from.join(" or ")})`);
    }
    // Raw SQL: finished by the database clock, like every time the executor writes. A resume starts the
    // health clock again: a paused time is no stall, earlier failures no streak.
    await tx.execute(
      `UPDATE replays SET status = $2, finished_at = CASE WHEN $2 = 'cancelled' THEN now() END,
              running_since = CASE WHEN $2 = 'running' THEN now() ELSE running_since END,
              consecutive_failures = CASE WHEN $2 = 'running' THEN 0 ELSE consecutive_failures END
       WHERE id = $1::uuid`,
      [id, t.to],
    );
    let cancelledItems = 0;
    if (action === "cancel") {
      const [{ n }] = await tx.query<{ n: number }>(`${CANCEL_ITEMS_SQL} SELECT count(*)::int AS n FROM it`, [id, actorOf(actor)]);
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
