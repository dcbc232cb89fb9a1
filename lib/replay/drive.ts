/**
 * One replay's driver (the executor, executor.ts, runs one per replay it holds): leases batches of due
 * items, re-checks each key just before its send, sends with at most `concurrency` in flight and
 * `ratePerSecond` starts per second, and records the results in batches. Until the replay is completed,
 * paused, cancelled, its lease lost, or the worker stops.
 *
 * Per batch (about half a second of sends, batchSize), one statement (worker-sql.ts LEASE_BATCH_SQL)
 * renews the replay's lease, reads its status (pause and cancel take effect here: the items leased but not
 * yet started are given back), leases the items and reads their payloads and the facts of the re-check;
 * before it, the source's destination and signing secrets are read again: each send uses those of the
 * latest batch read, so a rotation or a new destination applies from the next batch on. The next batch is leased while the current one is still being sent, so
 * the destination never waits for the database.
 *
 * The re-check (classify.ts recheckBeforeSend) runs right before each send on facts at most
 * RECHECK_MAX_AGE_MS old, evaluated at the moment of the send (the database's now at the read plus the time
 * since): facts older than that are read again, for every item still waiting, in one statement.
 * Results go through a SettleQueue: one statement per batch of results.
 */
import { execute, query } from "../db/sql";
import { recordAction } from "../audit/actions";
import { KeywardError } from "../errors";
import { replayTarget } from "../sources/signing-secret";
import { afterAttempt, givenBack, notSent, type ItemResult } from "./attempts";
import { backoffMs } from "./backoff";
import { DECIDING_KINDS, recheckBeforeSend, type AuditFact, type KeyFact } from "./classify";
import { replayHeaders } from "./deliver";
import { readFacts } from "./facts";
import { RateLimiter } from "./rate-limiter";
import type { Category } from "./schema";
import { senderFor, withTimeout, type SendResult } from "./send";
import { SettleQueue } from "./settle-queue";
import { HEARTBEAT_SQL, LEASE_BATCH_SQL, RELEASE_REPLAY_SQL, COMPLETE_SQL, type LeaseRow } from "./worker-sql";

export const BATCH_MAX = 100;
/** The re-check's facts are read again when older than this at a send (far inside SEND_MARGIN_SECONDS). */
export const RECHECK_MAX_AGE_MS = 500;
export const WORKER_ACTOR = "system:replay-worker";

/** Items leased per batch: about half a second of sends, at least one per concurrency slot. Pure. */
export function batchSize(ratePerSecond: number, concurrency: number): number {
  return Math.min(BATCH_MAX, Math.max(concurrency, Math.ceil(ratePerSecond / 2)));
}

/** Lease the next batch when this few leased items are left unstarted: about 100 ms of sends. Pure. */
export function lowWater(ratePerSecond: number, concurrency: number): number {
  return Math.min(batchSize(ratePerSecond, concurrency) - 1, Math.max(concurrency, Math.ceil(ratePerSecond / 10)));
}

export type ReplayRow = {
  id: string;
  source: string;
  rate_per_second: number;
  concurrency: number;
  forced: boolean;
  created_by: string;
  destination: string | null;
};

export type DriveOptions = {
  workerId: string;
  leaseSeconds: number;
  timeoutMs: number;
  pollMs: number;
  /** The worker's stop: aborts deliveries in flight. */
  signal: AbortSignal;
  log: (msg: string) => void;
  recheckMaxAgeMs?: number;
  settleDelayMs?: number;
};

type Target = { url: string; secrets: string[] };
type Facts = { key?: KeyFact; fact?: AuditFact; now: Date; /** performance.now() when the read was sent */ at: number };
type Leased = {
  deadLetterId: string;
  eventId: string;
  category: Category;
  attempts: number;
  body: Buffer | null;
  contentType: string;
  facts: Facts;
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

function factsOf(row: { event_id: string; expires_at: Date | null; key_status: string | null; lease_expires_at: Date | null; last_kind: string | null; last_at: Date | null }, now: Date, at: number): Facts {
  return {
    key: row.expires_at && row.key_status
      ? { eventId: row.event_id, expiresAt: row.expires_at, status: row.key_status as KeyFact["status"], leaseExpiresAt: row.lease_expires_at }
      : undefined,
    fact: row.last_kind && row.last_at ? { eventId: row.event_id, lastKind: row.last_kind as AuditFact["lastKind"], lastAt: row.last_at } : undefined,
    now,
    at,
  };
}

/** Drives one replay until it is completed, paused, cancelled, taken over, or the worker stops. */
export async function driveReplay(r: ReplayRow, o: DriveOptions): Promise<void> {
  const settle = new SettleQueue({ replayId: r.id, workerId: o.workerId, actor: r.created_by, delayMs: o.settleDelayMs, log: o.log });
  const feed = new Feed(r, o, settle);
  const limiter = new RateLimiter(r.rate_per_second);
  const forcedOf = (item: Leased) => r.forced && item.category === "expired_processed";

  const heartbeat = setInterval(
    () =>
      void query<{ status: string }>(HEARTBEAT_SQL, [r.id, o.workerId, o.leaseSeconds])
        .then((rows) => rows[0]?.status !== "running" && feed.stop())
        .catch(() => {}),
    Math.max(500, (o.leaseSeconds * 1000) / 3),
  );
  heartbeat.unref();

  async function send(item: Leased): Promise<ItemResult> {
    const forced = forcedOf(item);
    if (item.body === null) return notSent(item.deadLetterId, "failed", "the dead letter no longer exists", forced);
    try {
      await limiter.take(feed.stopped);
    } catch {
      return givenBack(item.deadLetterId, forced);
    }
    // The re-check, just before the send.
    const facts = await feed.fresh(item);
    const check = recheckBeforeSend(facts.key, facts.fact, facts.now, { category: item.category, forced: r.forced });
    if (!check.safe) return notSent(item.deadLetterId, "skipped_unsafe", check.reason, forced);
    if (feed.stopped.aborted) return givenBack(item.deadLetterId, forced);

    // The destination and secrets as read with the latest batch (a change applies from the next batch on).
    const target = feed.target!;
    let result: SendResult;
    const attempt = { replayId: r.id, deadLetterId: item.deadLetterId, eventId: item.eventId, attempt: item.attempts + 1 };
    const at = new Date();
    try {
      const headers = replayHeaders({ eventId: item.eventId, replayId: r.id, contentType: item.contentType, body: item.body, secret: target.secrets });
      const timeout = withTimeout(o.signal, o.timeoutMs);
      try {
        result = await senderFor(target.url)(attempt, target.url, headers, item.body, timeout.signal);
      } finally {
        timeout.clear();
      }
    } catch (err) {
      // replayHeaders refuses a secret not in whsec_ form: a configuration failure, not retryable.
      result = { ok: false, retryable: false, status: null, error: (err as Error).message, latencyMs: 0, responseBody: null };
    }
    const next = afterAttempt(result, item.attempts);
    return {
      deadLetterId: item.deadLetterId,
      outcome: next.outcome,
      attempt: next.countsAsAttempt,
      status: result.status,
      error: result.error,
      touchLast: next.countsAsAttempt,
      delayMs: next.outcome === "retry" && next.countsAsAttempt ? backoffMs(item.attempts + 1) : 0,
      forced,
      evidence: next.countsAsAttempt ? { at, destination: target.url, latencyMs: result.latencyMs, responseBody: result.responseBody } : null,
    };
  }

  async function slot(): Promise<void> {
    for (;;) {
      const item = await feed.next();
      if (!item) return;
      feed.inFlight++;
      try {
        settle.add(await send(item));
      } catch (err) {
        settle.add(givenBack(item.deadLetterId, forcedOf(item)));
        feed.fail(err);
      } finally {
        feed.inFlight--;
        feed.notify();
      }
    }
  }

  let failure: unknown = null;
  try {
    const slots = await Promise.allSettled(Array.from({ length: r.concurrency }, slot));
    failure = feed.error ?? slots.find((s): s is PromiseRejectedResult => s.status === "rejected")?.reason ?? null;
  } finally {
    clearInterval(heartbeat);
    feed.dispose();
    for (const item of feed.takeQueued()) settle.add(givenBack(item.deadLetterId, forcedOf(item)));
    try {
      await settle.drain();
    } catch (err) {
      failure ??= err;
    }
    // Paused, cancelled, completed or shutting down: give the replay back, so any instance can drive it
    // as soon as it runs again (a crash gives nothing back; the lease then lapses).
    await query(RELEASE_REPLAY_SQL, [r.id, o.workerId]).catch(() => {});
  }
  if (failure) throw failure;
}

/**
 * The leased items waiting to be sent, refilled a batch at a time (before the last ones are taken), and
 * the replay's state as read with each batch. `next()` answers null once the driver should end.
 */
class Feed {
  inFlight = 0;
  error: unknown = null;
  /** The source's destination and signing secrets as read with the latest batch. */
  target: Target | null = null;
  private readonly queue: Leased[] = [];
  private readonly stopCtl = new AbortController();
  private refilling: Promise<void> | null = null;
  private waiting: Promise<void> | null = null;
  private rechecking: Promise<void> | null = null;
  /** The last lease found fewer items than a batch: no prefetch until a refill finds a full one. */
  private dry = false;
  private noted: string | null;
  private wake: (() => void) | null = null;
  private readonly size: number;
  private readonly low: number;
  private readonly maxAgeMs: number;

  constructor(
    private readonly r: ReplayRow,
    private readonly o: DriveOptions,
    private readonly settle: SettleQueue,
  ) {
    this.size = batchSize(r.rate_per_second, r.concurrency);
    this.low = lowWater(r.rate_per_second, r.concurrency);
    this.noted = r.destination;
    this.maxAgeMs = o.recheckMaxAgeMs ?? RECHECK_MAX_AGE_MS;
    if (o.signal.aborted) this.stop();
    else o.signal.addEventListener("abort", this.onWorkerStop, { once: true });
  }

  private readonly onWorkerStop = () => this.stop();

  /** Stops and lets go of the worker's signal. */
  dispose(): void {
    this.stop();
    this.o.signal.removeEventListener("abort", this.onWorkerStop);
  }

  /** Aborted when the driver should stop starting sends (pause, cancel, lease lost, shutdown, failure). */
  get stopped(): AbortSignal {
    return this.stopCtl.signal;
  }

  stop(): void {
    if (!this.stopCtl.signal.aborted) this.stopCtl.abort(new Error("replay driver stopped"));
  }

  fail(err: unknown): void {
    this.error ??= err;
    this.stop();
  }

  /** An item in flight finished. */
  notify(): void {
    this.wake?.();
  }

  /** The items leased and never started (given back when the driver ends). */
  takeQueued(): Leased[] {
    return this.queue.splice(0);
  }

  async next(): Promise<Leased | null> {
    for (;;) {
      if (this.stopped.aborted) return null;
      const item = this.queue.shift();
      if (item) {
        if (this.queue.length <= this.low && !this.dry) this.refill().catch((err) => this.fail(err));
        return item;
      }
      try {
        await (this.waiting ??= this.waitForWork().finally(() => (this.waiting = null)));
      } catch (err) {
        this.fail(err);
      }
      if (this.error) throw this.error;
    }
  }

  /** The re-check's facts for `item` at this moment: read again (with every waiting item's) when too old. */
  async fresh(item: Leased): Promise<{ key?: KeyFact; fact?: AuditFact; now: Date }> {
    const old = item.facts;
    if (performance.now() - old.at > this.maxAgeMs) {
      // A read under way for other items may not cover this one: then one more, which does.
      while (item.facts === old) await (this.rechecking ??= this.recheck(item).finally(() => (this.rechecking = null)));
    }
    const f = item.facts;
    return { key: f.key, fact: f.fact, now: new Date(f.now.getTime() + (performance.now() - f.at)) };
  }

  private async recheck(first: Leased): Promise<void> {
    const items = [first, ...this.queue];
    const at = performance.now();
    const facts = await readFacts(this.r.source, items.map((i) => i.eventId));
    const keys = new Map(facts.keys.map((k) => [k.eventId, k]));
    const audit = new Map(facts.audit.map((a) => [a.eventId, a]));
    for (const i of items) i.facts = { key: keys.get(i.eventId), fact: audit.get(i.eventId), now: facts.now, at };
  }

  /** Nothing queued: lease more; when nothing is due, complete the replay or wait for retries to come due. */
  private async waitForWork(): Promise<void> {
    for (;;) {
      await this.refill();
      if (this.stopped.aborted || this.queue.length > 0) return;
      if (this.inFlight === 0) {
        await this.settle.drain();
        if (await this.complete()) return this.stop();
      }
      // Retries waiting for their backoff, or deliveries still in flight whose results may bring more.
      const woken = new Promise<void>((resolve) => (this.wake = resolve));
      await Promise.race([woken, sleep(Math.min(this.o.pollMs, 1000), this.stopped)]);
      this.wake = null;
    }
  }

  private refill(): Promise<void> {
    return (this.refilling ??= this.lease().finally(() => (this.refilling = null)));
  }

  private async lease(): Promise<void> {
    if (this.stopped.aborted) return;
    const target = await this.currentTarget();
    if (!target) return this.stop();
    this.target = target;
    const at = performance.now();
    const rows = await query<LeaseRow>(LEASE_BATCH_SQL, [this.r.id, this.size, this.o.leaseSeconds, this.o.workerId, this.r.source, [...DECIDING_KINDS]]);
    if (rows.length === 0 || rows[0].status !== "running") {
      // Lease lost, paused or cancelled. (Nothing was leased: the statement leases only while running.)
      return this.stop();
    }
    let n = 0;
    for (const row of rows) {
      if (row.dead_letter_id === null) continue;
      n++;
      this.queue.push({
        deadLetterId: row.dead_letter_id,
        eventId: row.event_id,
        category: row.category as Category,
        attempts: row.attempts,
        body: row.body,
        contentType: row.content_type ?? "application/json",
        facts: factsOf(row, row.now, at),
      });
    }
    this.dry = n < this.size;
  }

  /**
   * The source's destination and signing secrets now (read at each batch), noted on the replay when it
   * changed; null when either went away: the replay is then paused, with the reason in the action log.
   */
  private async currentTarget(): Promise<Target | null> {
    const r = this.r;
    try {
      const target = await replayTarget(r.source);
      if (target.url !== this.noted) {
        await query("UPDATE replays SET destination = $2 WHERE id = $1", [r.id, target.url]);
        this.noted = target.url;
      }
      return target;
    } catch (err) {
      if (!(err instanceof KeywardError) || err.status !== 409) throw err;
      const paused = await execute(
        "UPDATE replays SET status = 'paused', worker = NULL, last_error = $2, last_error_at = now() WHERE id = $1 AND status = 'running'",
        [r.id, `paused: ${err.message}`],
      );
      if (!paused) return null; // paused or cancelled meanwhile: nothing to record
      await recordAction(WORKER_ACTOR, {
        action: "replay.pause",
        target: { type: "replay", id: r.id },
        source: r.source,
        outcome: "failed",
        reason: err.message,
      });
      this.o.log(`replay ${r.id} paused: ${err.message}`);
      return null;
    }
  }

  /** Completes the replay when nothing is pending or delivering (recorded in the action log). */
  private async complete(): Promise<boolean> {
    const done = await query<{ source: string; total: number; counts: Record<string, number> }>(COMPLETE_SQL, [this.r.id]);
    if (!done.length) return false;
    await recordAction(WORKER_ACTOR, {
      action: "replay.complete",
      target: { type: "replay", id: this.r.id },
      source: done[0].source,
      after: { total: done[0].total, counts: done[0].counts },
    });
    return true;
  }
}
