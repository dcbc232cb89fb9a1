/**
 * The per-replay rate limit: a token bucket shared by one replay's delivery slots (drive.ts). Pure
 * apart from its clock, which is injectable so tests count tokens on virtual time.
 */
import "server-only";
/** Time source of the rate limiter; a virtual one makes tests exact (no wall-clock assertions). */
export type LimiterClock = { now(): number; setTimeout(fn: () => void, ms: number): () => void };

export const systemClock: LimiterClock = {
  now: () => performance.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

type Waiter = { resolve: () => void; reject: (reason: unknown) => void; signal?: AbortSignal; onAbort?: () => void };

/**
 * Token bucket: `perSecond` tokens per second, holding at most `burst` (default perSecond / 10, at
 * least 1: 100 ms worth, so a late timer does not lose throughput, and a start never floods the
 * destination). `take` resolves when a token is available, first come first served; an aborted `take`
 * rejects with the signal's reason and gives up its place.
 *
 * Hand-written (≈60 lines) rather than a library: bottleneck has not been released since 2019, p-limit
 * limits concurrency, not rate, and p-throttle can abort only all pending calls at once; none take an
 * injectable clock, which the tests use to assert exact counts instead of timings.
 */
export class RateLimiter {
  readonly perSecond: number;
  readonly burst: number;
  private readonly clock: LimiterClock;
  private tokens: number;
  private last: number;
  private readonly queue: Waiter[] = [];
  private cancelTimer: (() => void) | null = null;

  constructor(perSecond: number, options: { burst?: number; clock?: LimiterClock } = {}) {
    if (!(perSecond > 0) || !Number.isFinite(perSecond)) throw new RangeError(`perSecond must be > 0, got ${perSecond}`);
    this.perSecond = perSecond;
    this.burst = Math.max(1, options.burst ?? Math.floor(perSecond / 10));
    this.clock = options.clock ?? systemClock;
    this.tokens = 1;
    this.last = this.clock.now();
  }

  take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.refill();
    if (this.queue.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal };
      if (signal) {
        waiter.onAbort = () => {
          const i = this.queue.indexOf(waiter);
          if (i >= 0) this.queue.splice(i, 1);
          if (this.queue.length === 0) this.stopTimer();
          reject(signal.reason);
        };
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      this.queue.push(waiter);
      this.schedule();
    });
  }

  /** Callers waiting for a token. */
  get waiting(): number {
    return this.queue.length;
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.perSecond) / 1000);
    this.last = now;
  }

  private stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  private schedule(): void {
    if (this.cancelTimer || this.queue.length === 0) return;
    const waitMs = Math.max(1, Math.ceil(((1 - this.tokens) * 1000) / this.perSecond));
    this.cancelTimer = this.clock.setTimeout(() => {
      this.cancelTimer = null;
      this.refill();
      while (this.queue.length > 0 && this.tokens >= 1) {
        this.tokens -= 1;
        const w = this.queue.shift()!;
        if (w.signal && w.onAbort) w.signal.removeEventListener("abort", w.onAbort);
        w.resolve();
      }
      this.schedule();
    }, waitMs);
  }
}
