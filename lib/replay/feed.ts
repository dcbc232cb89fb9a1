/**
 * The items one replay's driver (drive.ts) is about to send: leased a batch at a time by one statement
 * (worker-sql.ts LEASE_BATCH_SQL: the replay's status and lease, the items, their payloads and the facts of
 * their re-check), the next batch leased while the current one is still being sent; the source's
 * destination and secrets read again before each batch; the re-check's facts read again when they grow
 * older than RECHECK_MAX_AGE_MS; and the replay completed once nothing is left. `next()` answers null once
 * the driver should end (completed, paused, cancelled, its lease lost, the worker stopping, a failure).
 */
import "server-only";
import { z } from "zod";
import { setMaxListeners } from "node:events";
import { execute, query } from "@/lib/db/sql";
import { recordAction } from "@/lib/audit/actions";
import { KeywardError } from "@/lib/errors";
import { replayTarget } from "@/lib/sources/signing-secret";
import type { AuditFact, KeyFact } from "./classify";
import { factsOfRow, readFacts } from "./facts";
import type { KeyFactsRow } from "@/lib/keys/verdict";
import type { Category } from "./schema";
import type { SettleQueue } from "./settle-queue";
import { COMPLETE_SQL, LEASE_BATCH_SQL, NEXT_DUE_SQL, LeaseRow } from "./worker-sql";

export const BATCH_MAX = 100;
/** The re-check's facts are read again when older than this at a send (far inside SEND_MARGIN_SECONDS). */
export const RECHECK_MAX_AGE_MS = 500;
export const WORKER_ACTOR = "system:replay-worker";

/** Items leased per batch: about half a second of sends, at least one per concurrency slot. Pure. */
export function batchSize(ratePerSecond: number, concurrency: number): number {
  return Math.min(BATCH_MAX, Math.max(concurrency, Math.ceil(ratePerSecond / 2)));
}

/**
 * Lease the next batch when this few leased items are left unstarted: about 250 ms of sends, so the lease
 * (and the destination's re-read) has that long to come back before the sends would wait for it. Pure.
 */
export function lowWater(ratePerSecond: number, concurrency: number): number {
  return Math.min(batchSize(ratePerSecond, concurrency) - 1, Math.max(concurrency, Math.ceil(ratePerSecond / 4)));
}

export const ReplayRow = z.object({
  id: z.string(),
  source: z.string(),
  rate_per_second: z.number(),
  concurrency: z.number(),
  forced: z.boolean(),
  created_by: z.string(),
  destination: z.string().nullable(),
  /** Its retry schedule (backoff.ts). */
  retry_max_attempts: z.number(),
  retry_initial_ms: z.number(),
  retry_max_delay_ms: z.number(),
});
export type ReplayRow = z.output<typeof ReplayRow>;

/**
 * A driver whose replay has nothing due and nothing in flight waits for the next retry itself when it is
 * due within this long; otherwise it gives the replay back (the executor takes it again once an item is
 * due: TAKE_REPLAYS_SQL), so a retry an hour away holds no worker slot and costs no polling.
 */
export const IDLE_RELEASE_MS = 5000;

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

/**
 * Where and with what a batch is sent: `url` is the destination as shown (an AMQP password masked),
 * `brokerUrl` the full broker URL published to (decrypted; only for an amqp(s), bullmq(s) or nats destination).
 */
export type Target = { url: string; brokerUrl?: string; secrets: string[] };
export type Facts = { key?: KeyFact; fact?: AuditFact; now: Date; /** performance.now() when the read was sent */ at: number };
export type Leased = {
  deadLetterId: string;
  eventId: string;
  category: Category;
  attempts: number;
  /** The payload when it is at most 1 MiB; larger ones are read just before the send (drive.ts). */
  body: Buffer | null;
  /** The payload's size; null: the dead letter no longer exists. */
  payloadBytes: number | null;
  contentType: string;
  facts: Facts;
};

export const sleep = (ms: number, signal: AbortSignal) =>
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

function factsOf(row: KeyFactsRow & { event_id: string }, now: Date, at: number): Facts {
  return { ...factsOfRow(row.event_id, row), now, at };
}

/**
 * The leased items waiting to be sent, refilled a batch at a time (before the last ones are taken), and
 * the replay's state as read with each batch. `next()` answers null once the driver should end.
 */
export class Feed {
  inFlight = 0;
  error: unknown = null;
  /** The source's destination and signing secrets as read with the latest batch. */
  target: Target | null = null;
  private readonly queue: Leased[] = [];
  /** Items handed to a send and not yet past their re-check. */
  private readonly handedOut = new Set<Leased>();
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
    setMaxListeners(0, this.stopCtl.signal); // every slot waiting for a token listens to it
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

  /**
   * Waits for a lease under way to come back (its error ignored: the driver is ending), so the items it
   * leased are queued, and given back with the rest, rather than left in delivery until their lease lapses.
   */
  async quiesce(): Promise<void> {
    await this.refilling?.catch(() => {});
  }

  async next(): Promise<Leased | null> {
    for (;;) {
      if (this.stopped.aborted) return null;
      const item = this.queue.shift();
      if (item) {
        this.handedOut.add(item);
        if (this.queue.length <= this.low && !this.dry) this.refill().catch((err) => this.fail(err));
        // Re-read the facts of the items still to be sent before they grow too old, so no send waits for it.
        if (performance.now() - item.facts.at > this.maxAgeMs / 2 && !this.rechecking) {
          this.rechecking = this.recheck().finally(() => (this.rechecking = null));
          this.rechecking.catch(() => {}); // a send that needs it waits for it (fresh), and then sees its error
        }
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
    // Older than allowed: wait for a read covering it. One under way may have started before the item was
    // handed out and not cover it; the next one does (it reads every item handed out).
    if (performance.now() - item.facts.at > this.maxAgeMs) {
      const old = item.facts;
      for (let i = 0; i < 2 && item.facts === old; i++) {
        await (this.rechecking ??= this.recheck().finally(() => (this.rechecking = null)));
      }
    }
    this.handedOut.delete(item);
    const f = item.facts;
    return { key: f.key, fact: f.fact, now: new Date(f.now.getTime() + (performance.now() - f.at)) };
  }

  /** An item handed out is done with (sent, skipped or given back). */
  finished(item: Leased): void {
    this.handedOut.delete(item);
  }

  /**
   * Reads the facts again for the items handed out and not yet checked and the items still queued, those
   * read more than a quarter of RECHECK_MAX_AGE_MS ago (a batch just leased came with fresh ones).
   */
  private async recheck(): Promise<void> {
    const at = performance.now();
    const items = [...this.handedOut, ...this.queue].filter((i) => at - i.facts.at > this.maxAgeMs / 4);
    if (items.length === 0) return;
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
      let waitMs = Math.min(this.o.pollMs, 1000);
      if (this.inFlight === 0) {
        const [next] = await query(z.object({ wait_ms: z.number().nullable() }), NEXT_DUE_SQL, [this.r.id]);
        // Nothing due soon: give the replay back rather than wait (the executor takes it when one is due).
        if (next?.wait_ms != null && next.wait_ms > IDLE_RELEASE_MS) return this.stop();
        if (next?.wait_ms != null) waitMs = Math.max(10, Math.ceil(next.wait_ms));
      }
      const woken = new Promise<void>((resolve) => (this.wake = resolve));
      await Promise.race([woken, sleep(waitMs, this.stopped)]);
      this.wake = null;
    }
  }

  private refill(): Promise<void> {
    return (this.refilling ??= this.lease().finally(() => (this.refilling = null)));
  }

  private async lease(): Promise<void> {
    if (this.stopped.aborted) return;
    const at = performance.now();
    // The destination and secrets are read alongside; whatever happens to that read, the items leased are
    // queued first, so that a stop (a missing destination pauses the replay) gives them back.
    const [target, leased] = await Promise.allSettled([
      this.currentTarget(),
      query(LeaseRow, LEASE_BATCH_SQL, [this.r.id, this.size, this.o.leaseSeconds, this.o.workerId, this.r.source]),
    ]);
    if (target.status === "fulfilled" && target.value) this.target = target.value;
    if (leased.status === "rejected") throw leased.reason;
    const rows = leased.value;
    // No row: the lease was lost; otherwise paused or cancelled. (Nothing is leased unless running.)
    if (rows.length === 0 || rows[0].status !== "running") return this.stop();
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
        payloadBytes: row.payload_bytes,
        contentType: row.content_type ?? "application/json",
        facts: factsOf(row, row.now, at),
      });
    }
    this.dry = n < this.size;
    if (target.status === "rejected") throw target.reason;
    if (!target.value) return this.stop();
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
        await execute("UPDATE replays SET destination = $2 WHERE id = $1", [r.id, target.url]);
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
    const done = await query(z.object({ source: z.string(), total: z.number(), counts: z.record(z.string(), z.number()) }), COMPLETE_SQL, [this.r.id]);
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
