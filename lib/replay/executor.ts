/**
 * The replay executor: a worker inside `keyward start` (KEYWARD_REPLAY_WORKER, on by default) that drives
 * running replays to the end. All state is in the database, so a restarted server resumes where the
 * previous one stopped.
 *
 * What it does, every KEYWARD_REPLAY_POLL_MS:
 *   1. takes up to MAX_REPLAYS_PER_WORKER running replays that no other live worker drives (a lease on the
 *      replay row, `FOR UPDATE SKIP LOCKED`; a dead worker's lease lapses after KEYWARD_REPLAY_LEASE_SECONDS),
 *      so each replay has one driver at a time and its rate limit holds across instances;
 *   2. for each, in a loop: renews its leases and re-reads the replay's status (pause/cancel take effect
 *      here, so within one batch), re-reads the source's destination and signing secrets (a rotation or a
 *      new destination applies from the next batch; the destination is noted on the replay for its
 *      progress; during a rotation's grace period both secrets sign), leases the next batch of due items (`FOR UPDATE SKIP LOCKED`, status
 *      delivering with lease_until; a lapsed lease is picked up again), and delivers them with at most
 *      `concurrency` in flight and `ratePerSecond` starts per second;
 *   3. per item: re-checks the key just before the send (classify.ts recheckBeforeSend), then POSTs the
 *      payload's stored bytes with its stored content type (deliver.ts); 2xx → delivered (dead letter delivered); a retryable failure → pending again
 *      after a backoff, up to MAX_ATTEMPTS; otherwise failed (dead letter back to pending). Each final
 *      outcome is written with its audit `replayed` row in one statement, conditional on this worker still
 *      holding the item's lease;
 *   4. a replay with nothing left pending or delivering is completed (recorded in the action log).
 * How it bounds its work: batches of at most BATCH_MAX items; a stop (server shutdown) aborts deliveries in
 * flight, puts their items back to pending and gives the replay's lease back.
 */
import os from "node:os";
import { randomBytes } from "node:crypto";
import { loadEnv } from "../config/env";
import { query, type PreparedSql } from "../db/sql";
import { recordAction } from "../audit/actions";
import { KeywardError } from "../errors";
import { replayTarget } from "../sources/signing-secret";
import { deliverOnce } from "./deliver";
import { backoffMs, MAX_ATTEMPTS } from "./backoff";
import { RateLimiter } from "./rate-limiter";
import { recheckBeforeSend } from "./classify";
import { readFacts } from "./facts";
import { CANCEL_ITEMS_SQL } from "./replays";
import type { Category } from "./schema";

export const MAX_REPLAYS_PER_WORKER = 4;
export const BATCH_MAX = 100;
const WORKER_ACTOR = "system:replay-worker";

/** Items leased per batch: about half a second of sends, at least one per concurrency slot. Pure. */
export function batchSize(ratePerSecond: number, concurrency: number): number {
  return Math.min(BATCH_MAX, Math.max(concurrency, Math.ceil(ratePerSecond / 2)));
}

/** What to do with an item after one delivery attempt. Pure. */
export function afterAttempt(
  result: { ok: boolean; retryable: boolean; error: string | null },
  attemptsBefore: number,
): { outcome: "delivered" | "failed" | "retry"; countsAsAttempt: boolean } {
  if (result.ok) return { outcome: "delivered", countsAsAttempt: true };
  // A delivery aborted by our own stop was not an attempt the destination answered.
  if (result.error === "aborted") return { outcome: "retry", countsAsAttempt: false };
  if (result.retryable && attemptsBefore + 1 < MAX_ATTEMPTS) return { outcome: "retry", countsAsAttempt: true };
  return { outcome: "failed", countsAsAttempt: true };
}

type ReplayRow = {
  id: string;
  source: string;
  rate_per_second: number;
  concurrency: number;
  forced: boolean;
  created_by: string;
  destination: string | null;
};
type LeasedItem = { dead_letter_id: string; event_id: string; category: Category; attempts: number };
type Payload = { body: Buffer; content_type: string };

const TAKE_REPLAYS_SQL = `
UPDATE replays r SET worker = $1, worker_lease_until = now() + make_interval(secs => $2::int)
FROM (SELECT id FROM replays
      WHERE status = 'running' AND NOT (id = ANY($3::uuid[]))
        AND (worker IS NULL OR worker = $1 OR worker_lease_until < now())
      ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED) pick
WHERE r.id = pick.id
RETURNING r.id, r.source, r.rate_per_second, r.concurrency, r.forced, r.created_by, r.destination`;

/** Renews the replay's lease and its leased items' leases; answers the replay's status (none: lease lost). */
const HEARTBEAT_SQL = `
WITH r AS (
  UPDATE replays SET worker_lease_until = now() + make_interval(secs => $3::int)
  WHERE id = $1::uuid AND worker = $2 RETURNING status),
items AS (
  UPDATE replay_items SET lease_until = now() + make_interval(secs => $3::int)
  WHERE replay_id = $1::uuid AND outcome = 'delivering' AND leased_by = $2 AND EXISTS (SELECT 1 FROM r))
SELECT status FROM r`;

const LEASE_ITEMS_SQL: PreparedSql = { name: "keyward_replay_lease", text: `
UPDATE replay_items i SET outcome = 'delivering', lease_until = now() + make_interval(secs => $3::int), leased_by = $4
FROM (SELECT replay_id, dead_letter_id FROM replay_items
      WHERE replay_id = $1::uuid
        AND ((outcome = 'pending' AND next_attempt_at <= now()) OR (outcome = 'delivering' AND lease_until < now()))
      ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) pick
WHERE i.replay_id = pick.replay_id AND i.dead_letter_id = pick.dead_letter_id
RETURNING i.dead_letter_id, i.event_id, i.category, i.attempts` };

/**
 * Records one item's result. $3 is delivered | failed | skipped_unsafe | retry; a retry goes back to pending
 * after $7 ms, or becomes cancelled when the replay was cancelled meanwhile. Final outcomes settle the dead
 * letter and append the audit `replayed` row, in this one statement. Only while this worker ($8) holds
 * the item.
 */
const SETTLE_SQL: PreparedSql = { name: "keyward_replay_settle", text: `
WITH dec AS (
  SELECT CASE WHEN $3 <> 'retry' THEN $3
              WHEN (SELECT status FROM replays WHERE id = $1::uuid) = 'cancelled' THEN 'cancelled'
              ELSE 'pending' END AS outcome),
it AS (
  UPDATE replay_items i SET outcome = dec.outcome, attempts = i.attempts + $4, last_status = coalesce($5, i.last_status),
         last_error = $6,
         next_attempt_at = CASE WHEN dec.outcome = 'pending' THEN now() + make_interval(secs => $7::float8 / 1000) ELSE i.next_attempt_at END,
         finished_at = CASE WHEN dec.outcome = 'pending' THEN NULL ELSE now() END,
         lease_until = NULL, leased_by = NULL
  FROM dec
  WHERE i.replay_id = $1::uuid AND i.dead_letter_id = $2::uuid AND i.outcome = 'delivering' AND i.leased_by = $8
  RETURNING i.replay_id, i.dead_letter_id, i.outcome, i.attempts, i.last_status, i.last_error),
dl AS (
  UPDATE dead_letters d
  SET status = CASE WHEN it.outcome = 'delivered' THEN 'delivered' ELSE 'pending' END,
      settled_at = CASE WHEN it.outcome = 'delivered' THEN now() END,
      last_replay_error = CASE WHEN it.outcome = 'delivered' THEN NULL ELSE it.last_error END
  FROM it WHERE d.id = it.dead_letter_id AND it.outcome <> 'pending' AND d.status = 'replaying'),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT d.source, d.event_id, d.event_type, 'replayed', $9,
         jsonb_strip_nulls(jsonb_build_object('replayId', it.replay_id, 'deadLetterId', it.dead_letter_id, 'outcome', it.outcome,
                                              'attempts', it.attempts, 'status', it.last_status, 'error', it.last_error,
                                              'forced', CASE WHEN $10::boolean THEN true END))
  FROM it JOIN dead_letters d ON d.id = it.dead_letter_id WHERE it.outcome <> 'pending')
SELECT outcome FROM it` };

const COMPLETE_SQL = `
UPDATE replays r SET status = 'completed', finished_at = now(), worker = NULL, worker_lease_until = NULL
WHERE r.id = $1::uuid AND r.status = 'running'
  AND NOT EXISTS (SELECT 1 FROM replay_items WHERE replay_id = r.id AND outcome IN ('pending', 'delivering'))
RETURNING r.source, r.total,
  (SELECT jsonb_object_agg(outcome, n) FROM (SELECT outcome, count(*)::int AS n FROM replay_items WHERE replay_id = r.id GROUP BY outcome) c) AS counts`;

export type WorkerOptions = {
  /** Poll interval (default KEYWARD_REPLAY_POLL_MS). */
  pollMs?: number;
  /** Replay and item lease (default KEYWARD_REPLAY_LEASE_SECONDS). */
  leaseSeconds?: number;
  /** Per-delivery timeout (default KEYWARD_REPLAY_TIMEOUT_MS). */
  timeoutMs?: number;
  workerId?: string;
  log?: (msg: string) => void;
};

export type ReplayWorker = { id: string; stop(): Promise<void>; /** Resolves once nothing is being driven. */ idle(): Promise<void> };

/** Starts the worker; `stop()` aborts deliveries in flight, puts their items back and gives leases back. */
export function startReplayWorker(options: WorkerOptions = {}): ReplayWorker {
  const env = loadEnv();
  const pollMs = options.pollMs ?? env.KEYWARD_REPLAY_POLL_MS;
  const leaseSeconds = options.leaseSeconds ?? env.KEYWARD_REPLAY_LEASE_SECONDS;
  const timeoutMs = options.timeoutMs ?? env.KEYWARD_REPLAY_TIMEOUT_MS;
  const workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
  const log = options.log ?? ((m: string) => console.error(`[keyward] ${m}`));
  const abort = new AbortController();
  const drivers = new Map<string, Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      abort.signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
    });

  async function tick(): Promise<void> {
    // Cancelled replays: items a dead worker left in delivery are settled as cancelled once their lease lapses.
    const cancelled = await query<{ id: string }>(
      `SELECT DISTINCT i.replay_id AS id FROM replay_items i JOIN replays r ON r.id = i.replay_id
       WHERE r.status = 'cancelled' AND i.outcome = 'delivering' AND i.lease_until < now() LIMIT 10`,
    );
    for (const c of cancelled) await query(`${CANCEL_ITEMS_SQL} SELECT 1`, [c.id, WORKER_ACTOR]);
    const room = MAX_REPLAYS_PER_WORKER - drivers.size;
    if (room <= 0 || abort.signal.aborted) return;
    const taken = await query<ReplayRow>(TAKE_REPLAYS_SQL, [workerId, leaseSeconds, [...drivers.keys()], room]);
    for (const r of taken) {
      const d = drive(r)
        .catch((err: unknown) => log(`replay ${r.id}: ${(err as Error).message} (will retry)`))
        .finally(() => drivers.delete(r.id));
      drivers.set(r.id, d);
    }
  }

  type Target = Awaited<ReturnType<typeof replayTarget>>;

  /**
   * The source's destination and signing secrets now (read at each batch, so a rotation or a new
   * destination applies from the next batch), noted on the replay when it changed; null when either went
   * away: the replay is then paused, with the reason in the action log.
   */
  async function currentTarget(r: ReplayRow, noted: string | null): Promise<Target | null> {
    try {
      const target = await replayTarget(r.source);
      if (target.url !== noted) await query("UPDATE replays SET destination = $2 WHERE id = $1", [r.id, target.url]);
      return target;
    } catch (err) {
      if (!(err instanceof KeywardError) || err.status !== 409) throw err;
      await query("UPDATE replays SET status = 'paused', worker = NULL WHERE id = $1 AND status = 'running'", [r.id]);
      await recordAction(WORKER_ACTOR, {
        action: "replay.pause",
        target: { type: "replay", id: r.id },
        source: r.source,
        outcome: "failed",
        reason: err.message,
      });
      log(`replay ${r.id} paused: ${err.message}`);
      return null;
    }
  }

  async function drive(r: ReplayRow): Promise<void> {
    const limiter = new RateLimiter(r.rate_per_second);
    const size = batchSize(r.rate_per_second, r.concurrency);
    const heartbeatMs = Math.max(500, (leaseSeconds * 1000) / 3);
    let heartbeat: NodeJS.Timeout | undefined;
    const beat = async () => (await query<{ status: string }>(HEARTBEAT_SQL, [r.id, workerId, leaseSeconds]))[0]?.status;
    try {
      heartbeat = setInterval(() => void beat().catch(() => {}), heartbeatMs);
      heartbeat.unref();
      let noted = r.destination;
      while (!abort.signal.aborted) {
        const status = await beat();
        if (status !== "running") return; // paused, cancelled, or another worker took over
        const target = await currentTarget(r, noted);
        if (!target) return;
        noted = target.url;
        const items = await query<LeasedItem>(LEASE_ITEMS_SQL, [r.id, size, leaseSeconds, workerId]);
        if (items.length === 0) {
          const done = await query<{ source: string; total: number; counts: Record<string, number> }>(COMPLETE_SQL, [r.id]);
          if (done.length) {
            await recordAction(WORKER_ACTOR, {
              action: "replay.complete",
              target: { type: "replay", id: r.id },
              source: done[0].source,
              after: { total: done[0].total, counts: done[0].counts },
            });
            return;
          }
          await sleep(Math.min(pollMs, 1000)); // retries waiting for their backoff
          continue;
        }
        // The payload bytes exactly as received at intake, and the media type they go out with.
        const payloads = new Map(
          (
            await query<Payload & { id: string }>("SELECT id, payload AS body, content_type FROM dead_letters WHERE id = ANY($1::uuid[])", [
              items.map((i) => i.dead_letter_id),
            ])
          ).map((p) => [p.id, p]),
        );
        let next = 0;
        const slot = async () => {
          while (next < items.length) {
            const item = items[next++];
            await deliverItem(r, target, item, payloads.get(item.dead_letter_id), limiter);
          }
        };
        await Promise.all(Array.from({ length: Math.min(r.concurrency, items.length) }, slot));
      }
    } finally {
      clearInterval(heartbeat);
      // Paused, cancelled, completed or shutting down: give the replay back, so any instance can drive it
      // as soon as it runs again (a crash gives nothing back; the lease then lapses).
      await query("UPDATE replays SET worker = NULL, worker_lease_until = NULL WHERE id = $1 AND worker = $2", [r.id, workerId]).catch(() => {});
    }
  }

  async function settle(
    r: ReplayRow,
    item: LeasedItem,
    outcome: "delivered" | "failed" | "skipped_unsafe" | "retry",
    o: { attempt: boolean; status?: number | null; error?: string | null; delayMs?: number },
  ): Promise<void> {
    await query(SETTLE_SQL, [
      r.id,
      item.dead_letter_id,
      outcome,
      o.attempt ? 1 : 0,
      o.status ?? null,
      o.error ?? null,
      o.delayMs ?? 0,
      workerId,
      r.created_by,
      r.forced && item.category === "expired_processed",
    ]);
  }

  async function deliverItem(
    r: ReplayRow,
    target: Target,
    item: LeasedItem,
    payload: Payload | undefined,
    limiter: RateLimiter,
  ): Promise<void> {
    if (payload === undefined) {
      await settle(r, item, "failed", { attempt: false, error: "the dead letter no longer exists" });
      return;
    }
    try {
      await limiter.take(abort.signal);
    } catch {
      await settle(r, item, "retry", { attempt: false, error: "aborted" });
      return;
    }
    // The re-check, just before the send.
    const facts = await readFacts(r.source, [item.event_id]);
    const check = recheckBeforeSend(facts.keys[0], facts.audit[0], facts.now, { category: item.category, forced: r.forced });
    if (!check.safe) {
      await settle(r, item, "skipped_unsafe", { attempt: false, error: check.reason });
      return;
    }
    const result = await deliverOnce({
      url: target.url,
      id: item.event_id,
      body: payload.body,
      contentType: payload.content_type,
      secret: target.secrets,
      replayId: r.id,
      timeoutMs,
      signal: abort.signal,
    });
    const next = afterAttempt(result, item.attempts);
    await settle(r, item, next.outcome, {
      attempt: next.countsAsAttempt,
      status: result.status,
      error: result.error,
      delayMs: next.outcome === "retry" && next.countsAsAttempt ? backoffMs(item.attempts + 1) : 0,
    });
  }

  const arm = () => {
    if (abort.signal.aborted) return;
    timer = setTimeout(() => {
      ticking = tick()
        .catch((err: unknown) => log(`replay worker: ${(err as Error).message} (will retry)`))
        .finally(() => {
          ticking = undefined;
          arm();
        });
    }, pollMs);
    timer.unref();
  };
  arm();

  return {
    id: workerId,
    async stop() {
      abort.abort();
      clearTimeout(timer);
      await ticking;
      await Promise.all(drivers.values());
    },
    async idle() {
      while (drivers.size || ticking) await Promise.all([...drivers.values(), ticking]);
    },
  };
}

/** The server's worker (lib/server/start.ts): off with KEYWARD_REPLAY_WORKER=0 (tests set that). */
export function scheduleReplayWorker(log: (msg: string) => void): () => Promise<void> {
  if (!loadEnv().KEYWARD_REPLAY_WORKER) return async () => {};
  const worker = startReplayWorker({ log });
  return () => worker.stop();
}
