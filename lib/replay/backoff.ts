/**
 * How many times one replay item is attempted, and how long to wait between attempts. Pure; imported
 * by the executor (attempts.ts) and the console (the one MAX_ATTEMPTS).
 */

/** Attempts per item before it is `failed` (a non-retryable failure ends it sooner). */
export const MAX_ATTEMPTS = 5;
export const BACKOFF_BASE_MS = 1000;

/**
 * The upper bound of the wait after failed attempt `attempt` (1-based): 1 s, 2 s, 4 s, 8 s, 16 s for
 * attempts 1..5; attempts beyond 5 use 16 s (the schedule is bounded).
 */
export function backoffCeilingMs(attempt: number): number {
  if (!Number.isFinite(attempt)) throw new RangeError(`attempt must be a number ≥ 1, got ${attempt}`);
  const n = Math.min(Math.max(Math.floor(attempt), 1), MAX_ATTEMPTS);
  return BACKOFF_BASE_MS * 2 ** (n - 1);
}

/**
 * How long to wait after failed attempt `attempt` before the next one: "full jitter" (AWS architecture
 * blog), uniform in [0, backoffCeilingMs(attempt)), so retries from many items spread out instead of
 * arriving together. `random` (default Math.random, values in [0, 1)) is injectable for deterministic tests.
 */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.floor(r * backoffCeilingMs(attempt));
}
