/**
 * Replays: starting one from a preflight (idempotent on the Idempotency-Key header, refused when the
 * preflight is stale, when `expiring` items are included without an extend, when `expired_processed`
 * items are included without a reason, or when `in_flight` items are included), reading them, and
 * pausing, resuming and cancelling them. The executor (executor.ts) does the deliveries. Every state
 * change is recorded in the operator action log in the same transaction.
 */
import { createHash } from "node:crypto";
import { KeywardError } from "../errors";
import { prisma } from "../db/client";
import { query } from "../db/sql";
import { parseOrThrow } from "../http/validate";
import { isInstant } from "../http/fields";
import { recordAction } from "../audit/actions";
import { actorOf, type Principal } from "../auth/principal";
import { UUID_RE } from "../deadletters/list";
import { replayTarget } from "../sources/signing-secret";
import { staleError } from "./preflight";
import { wakeReplayWorkers } from "./wake";
import { replayHealth } from "./health";
import { loadEnv } from "../config/env";
import {
  idempotencyKey,
  listReplaysQuery,
  OUTCOMES,
  startReplayRequest,
  type Category,
  type Outcome,
  type Replay,
  type ReplayItemResult,
  type ReplayStatus,
  type ReplaySummary,
} from "./schema";

const TX = { timeout: 30_000, maxWait: 10_000 };

/** What makes two requests "the same" for the Idempotency-Key: the parsed body with its defaults, include as a set. */
export function requestHash(r: ReturnType<typeof startReplayRequest.parse>): string {
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
  body: unknown,
  key: string | null,
  actor: Principal,
): Promise<{ replayId: string; total: number; created: boolean }> {
  const idemKey = parseOrThrow(idempotencyKey.describe("Idempotency-Key"), key ?? "");
  const r = parseOrThrow(startReplayRequest, body);
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
  const [pre] = await query<{ source: string; started: boolean }>(
    "SELECT source, EXISTS (SELECT 1 FROM replays WHERE idempotency_key = $2) AS started FROM replay_preflights WHERE id = $1::uuid",
    [r.preflightId, idemKey],
  );
  if (pre && !pre.started) await replayTarget(pre.source);

  const started = await prisma().$transaction(async (tx) => {
    // One start per key at a time: the second of two concurrent requests waits here, then finds the first.
    await tx.$executeRawUnsafe("SELECT pg_advisory_xact_lock(hashtext('keyward-replay-idempotency:' || $1))", idemKey);
    const existing = await tx.replay.findUnique({ where: { idempotencyKey: idemKey } });
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
    const [pf] = await tx.$queryRawUnsafe<
      { id: string; source: string; stale: boolean; valid_until: Date; extended_at: Date | null; expiring: number }[]
    >(
      `SELECT p.id, p.source, p.valid_until <= now() AS stale, p.valid_until, p.extended_at,
              (SELECT count(*)::int FROM replay_preflight_items i WHERE i.preflight_id = p.id AND i.category = 'expiring') AS expiring
       FROM replay_preflights p WHERE p.id = $1::uuid FOR UPDATE`,
      r.preflightId,
    );
    if (!pf) throw KeywardError.notFound("preflight_not_found", `no preflight ${r.preflightId}`);
    if (pf.stale) throw staleError(pf.id, pf.valid_until);
    if (include.includes("expiring") && pf.expiring > 0 && !pf.extended_at) {
      throw KeywardError.conflict(
        "extension_required",
        `${pf.expiring} expiring item(s) would lose their key during the replay: extend the preflight first (POST /api/v1/replays/preflight/${pf.id}/extend), or leave expiring out`,
      );
    }
    if (pf.source !== pre?.source || pre.started) {
      throw KeywardError.conflict("preflight_changed", "the preflight changed while the replay was being started; retry");
    }

    const created = await tx.replay.create({
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
    const taken = await tx.$queryRawUnsafe<{ category: Category; n: number }[]>(
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
      pf.id,
      include,
      created.id,
    );
    const total = taken.reduce((s, t) => s + t.n, 0);
    if (total === 0) {
      throw KeywardError.unprocessable(
        "nothing_to_replay",
        "the preflight has no pending dead letters in the chosen categories (they may have been replayed since)",
        { fields: [{ field: "include", message: "selects no pending dead letter" }] },
      );
    }
    await tx.replay.update({ where: { id: created.id }, data: { total } });
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
  }, TX);
  if (started.created) wakeReplayWorkers();
  return started;
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

export async function getReplaySummary(id: string): Promise<ReplaySummary> {
  if (!UUID_RE.test(id)) throw notFound(id);
  const [row] = await query<ReplayRow>(`${SUMMARY_SQL} WHERE r.id = $1`, [id]);
  if (!row) throw notFound(id);
  return toSummary(row);
}

type ItemRow = {
  dead_letter_id: string;
  event_id: string;
  outcome: Outcome;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  finished_at: Date | null;
};
const toItem = (i: ItemRow): ReplayItemResult => ({
  deadLetterId: i.dead_letter_id,
  eventId: i.event_id,
  outcome: i.outcome,
  attempts: i.attempts,
  lastStatus: i.last_status,
  lastError: i.last_error,
  finishedAt: i.finished_at?.toISOString() ?? null,
});

/** A replay with its progress, its failures (failed and skipped_unsafe, first 500) and its first 500 items. */
export async function getReplay(id: string): Promise<Replay> {
  const summary = await getReplaySummary(id);
  const cols = "dead_letter_id, event_id, outcome, attempts, last_status, last_error, finished_at";
  const [failures, items] = await Promise.all([
    query<ItemRow>(`SELECT ${cols} FROM replay_items WHERE replay_id = $1 AND outcome IN ('failed', 'skipped_unsafe') ORDER BY seq LIMIT 500`, [id]),
    query<ItemRow>(`SELECT ${cols} FROM replay_items WHERE replay_id = $1 ORDER BY seq LIMIT 500`, [id]),
  ]);
  return { ...summary, failures: failures.map(toItem), items: items.map(toItem) };
}

/** Newest first, keyset-paginated on (created_at, id). */
export async function listReplays(input: unknown): Promise<{ items: ReplaySummary[]; nextCursor: string | null }> {
  const q = parseOrThrow(listReplaysQuery, input);
  const values: unknown[] = [];
  const p = (v: unknown) => `$${values.push(v)}`;
  const where: string[] = [];
  if (q.source) where.push(`r.source = ${p(q.source)}`);
  if (q.status) where.push(`r.status = ${p(q.status)}`);
  if (q.cursor) {
    const m = /^(\d{4}-\d\d-\d\dT[\d:.]+Z)_([0-9a-f-]{36})$/i.exec(Buffer.from(q.cursor, "base64url").toString("utf8"));
    if (!m || !isInstant(m[1]) || !UUID_RE.test(m[2])) {
      throw KeywardError.unprocessable("invalid_request", "cursor: must be a cursor from a previous page", {
        fields: [{ field: "cursor", message: "must be a cursor from a previous page" }],
      });
    }
    // created_at has microseconds, the cursor milliseconds: the row's own created_at is compared at ms.
    where.push(`(date_trunc('milliseconds', r.created_at), r.id) < (${p(m[1])}::timestamptz, ${p(m[2])}::uuid)`);
  }
  const rows = await query<ReplayRow>(
    `${SUMMARY_SQL} ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
     ORDER BY date_trunc('milliseconds', r.created_at) DESC, r.id DESC LIMIT ${p(q.limit + 1)}`,
    values,
  );
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(toSummary),
    nextCursor:
      rows.length > q.limit && last ? Buffer.from(`${last.created_at.toISOString()}_${last.id}`).toString("base64url") : null,
  };
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
export async function changeReplay(id: string, action: keyof typeof TRANSITIONS, actor: Principal): Promise<ReplaySummary> {
  if (!UUID_RE.test(id)) throw notFound(id);
  const t = TRANSITIONS[action];
  await prisma().$transaction(async (tx) => {
    const [row] = await tx.$queryRawUnsafe<{ status: ReplayStatus; source: string }[]>(
      "SELECT status, source FROM replays WHERE id = $1::uuid FOR UPDATE",
      id,
    );
    if (!row) throw notFound(id);
    if (!t.from.includes(row.status)) {
      throw KeywardError.conflict("invalid_state", `cannot ${action} a ${row.status} replay (only ${t.from.join(" or ")})`);
    }
    await tx.$executeRawUnsafe(
      // A resume starts the health clock again: a paused time is no stall, earlier failures no streak.
      `UPDATE replays SET status = $2, finished_at = CASE WHEN $2 = 'cancelled' THEN now() END,
              running_since = CASE WHEN $2 = 'running' THEN now() ELSE running_since END,
              consecutive_failures = CASE WHEN $2 = 'running' THEN 0 ELSE consecutive_failures END
       WHERE id = $1::uuid`,
      id,
      t.to,
    );
    let cancelledItems = 0;
    if (action === "cancel") {
      const [{ n }] = await tx.$queryRawUnsafe<{ n: number }[]>(`${CANCEL_ITEMS_SQL} SELECT count(*)::int AS n FROM it`, id, actorOf(actor));
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
  }, TX);
  if (action === "resume") wakeReplayWorkers();
  return getReplaySummary(id);
}

/**
 * Settles a cancelled replay's items that no worker is delivering (pending, or delivering with a lapsed
 * lease) as cancelled: their dead letters go back to pending, each gets an audit `replayed` row.
 * $1 = replay id, $2 = actor. Used by cancel and by the executor's sweep.
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
