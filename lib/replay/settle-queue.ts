/**
 * Batched settling for one replay's driver: results are collected and written by one statement per batch
 * (worker-sql.ts SETTLE_BATCH_SQL) instead of one per item. A batch goes out once `maxBatch` results wait,
 * or `delayMs` after the first of them, one statement at a time; `drain()` writes everything now (before
 * the completion check, and when the driver stops). Items waiting here are still `delivering` under this
 * worker's lease (the heartbeat renews it), so nobody else takes them; a crash before the write lets the
 * leases lapse and the items are sent again (delivery is at least once, the receiver's claim makes it
 * harmless). A failed write keeps its results and is tried again; `drain()` gives up after a few tries.
 */
import "server-only";
import { execute } from "@/lib/db/sql";
import type { ItemResult } from "./attempts";
import { SETTLE_BATCH_SQL } from "./worker-sql";

export type SettleQueueOptions = {
  replayId: string;
  workerId: string;
  /** Who the audit `replayed` rows name (the replay's creator). */
  actor: string;
  /** Wait at most this long after the first waiting result (default 200 ms). */
  delayMs?: number;
  /** Write as soon as this many results wait (default 100). */
  maxBatch?: number;
  log: (msg: string) => void;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class SettleQueue {
  private readonly waiting = new Map<string, ItemResult>();
  private writing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastError: unknown = null;
  private readonly delayMs: number;
  private readonly maxBatch: number;

  constructor(private readonly o: SettleQueueOptions) {
    this.delayMs = o.delayMs ?? 200;
    this.maxBatch = o.maxBatch ?? 100;
  }

  /** Results not yet written. */
  get size(): number {
    return this.waiting.size;
  }

  add(result: ItemResult): void {
    this.waiting.set(result.deadLetterId, result);
    if (this.waiting.size >= this.maxBatch) this.kick();
    else this.timer ??= setTimeout(() => ((this.timer = null), this.kick()), this.delayMs);
  }

  /** Writes every waiting result now; throws when the database keeps refusing (the results are kept). */
  async drain(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.kick();
      await this.writing;
      if (this.waiting.size === 0) return;
      if (attempt >= 4) throw this.lastError instanceof Error ? this.lastError : new Error(String(this.lastError));
      await sleep(250 * attempt);
    }
  }

  private kick(): void {
    this.writing ??= this.writeAll().finally(() => (this.writing = null));
  }

  /** One statement at a time, until nothing waits or a write fails (then it is tried again in a second). */
  private async writeAll(): Promise<void> {
    while (this.waiting.size > 0) {
      const batch = [...this.waiting.values()].slice(0, this.maxBatch * 4);
      for (const r of batch) this.waiting.delete(r.deadLetterId);
      try {
        await execute(SETTLE_BATCH_SQL, settleParams(this.o, batch));
        this.lastError = null;
      } catch (err) {
        // Keep them (a result added meanwhile for the same item is newer and wins).
        for (const r of batch) if (!this.waiting.has(r.deadLetterId)) this.waiting.set(r.deadLetterId, r);
        this.lastError = err;
        this.o.log(`replay ${this.o.replayId}: recording ${batch.length} result(s) failed: ${(err as Error).message} (will retry)`);
        this.timer ??= setTimeout(() => ((this.timer = null), this.kick()), 1000);
        return;
      }
    }
  }
}

/**
 * What a batch of results does to the replay's health, in the order the results came: whether one was a
 * delivery (the failure streak ends), the failed attempts after the last delivery, and the latest failure.
 * Pure.
 */
export function healthOf(batch: readonly ItemResult[]): { delivered: boolean; failuresAfter: number; lastError: string | null; lastErrorAt: Date | null } {
  let delivered = false;
  let failuresAfter = 0;
  let lastError: string | null = null;
  let lastErrorAt: Date | null = null;
  for (const r of batch) {
    if (!r.attempt) continue;
    if (r.outcome === "delivered") {
      delivered = true;
      failuresAfter = 0;
    } else {
      failuresAfter++;
      lastError = r.error;
      lastErrorAt = r.evidence?.at ?? null;
    }
  }
  return { delivered, failuresAfter, lastError, lastErrorAt };
}

/** SETTLE_BATCH_SQL's parameters: the replay, the actor, the worker, one array per column, the health. */
export function settleParams(o: Pick<SettleQueueOptions, "replayId" | "workerId" | "actor">, batch: readonly ItemResult[]): unknown[] {
  const h = healthOf(batch);
  return [
    o.replayId,
    o.actor,
    o.workerId,
    batch.map((r) => r.deadLetterId),
    batch.map((r) => r.outcome),
    batch.map((r) => (r.attempt ? 1 : 0)),
    batch.map((r) => r.status),
    batch.map((r) => r.error),
    batch.map((r) => r.touchLast),
    batch.map((r) => r.delayMs),
    batch.map((r) => r.forced),
    batch.map((r) => r.evidence?.at ?? null),
    batch.map((r) => r.evidence?.destination ?? null),
    batch.map((r) => r.evidence?.latencyMs ?? null),
    batch.map((r) => r.evidence?.responseBody ?? null),
    h.delivered,
    h.failuresAfter,
    h.lastError,
    h.lastErrorAt,
    batch.map((r) => (r.evidence ? JSON.stringify(r.evidence.requestHeaders) : null)),
    batch.map((r) => (r.evidence?.responseHeaders ? JSON.stringify(r.evidence.responseHeaders) : null)),
  ];
}
