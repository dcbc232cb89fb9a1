/**
 * A replay's retry schedule: how many times one item is attempted, and how long to wait between attempts.
 * Pure; imported by the executor (drive.ts, attempts.ts), the start of a replay (its defaults), health.ts
 * and the console. Each replay keeps the schedule it was started with (replays.retry_*), so a retry hours
 * later follows it after a restart. Defaults: docs/replay-delivery.md ("Retries and rate").
 */

/** The schedule of one replay. */
export type RetrySchedule = {
  /** Attempts per item before it is `failed` (a non-retryable failure ends it sooner). */
  maxAttempts: number;
  /** The first wait's ceiling; each next one doubles… */
  initialDelayMs: number;
  /** …up to this ceiling. */
  maxDelayMs: number;
};

/**
 * The schedule a replay had before schedules were per replay, and the one the test suite runs with
 * (vitest.config.mts sets it through the environment): 5 attempts, 1 s doubling to 16 s.
 */
export const MAX_ATTEMPTS = 5;
export const BACKOFF_BASE_MS = 1000;
export const LEGACY_SCHEDULE: RetrySchedule = { maxAttempts: MAX_ATTEMPTS, initialDelayMs: BACKOFF_BASE_MS, maxDelayMs: 16_000 };

/**
 * The default for new replays (KEYWARD_REPLAY_RETRY_* override it per deployment, a start request's
 * `retry` per replay): 12 attempts, 10 s doubling to 1 h, so the waits' ceilings add up to about 3 h 25 min
 * (between half and all of it with jitter): a destination down for minutes or an hour fails nothing.
 */
export const DEFAULT_SCHEDULE: RetrySchedule = { maxAttempts: 12, initialDelayMs: 10_000, maxDelayMs: 3_600_000 };

/**
 * The ceiling of the wait after failed attempt `attempt` (1-based): initialDelayMs × 2^(attempt-1), at most
 * maxDelayMs. With the legacy schedule 1 s, 2 s, 4 s, 8 s, 16 s, 16 s, …
 */
export function backoffCeilingMs(attempt: number, s: RetrySchedule = LEGACY_SCHEDULE): number {
  if (!Number.isFinite(attempt)) throw new RangeError(`attempt must be a number ≥ 1, got ${attempt}`);
  const n = Math.max(Math.floor(attempt), 1);
  // 2^(n-1) overflows nothing that matters: past 2^40 the cap has long applied.
  return Math.min(s.initialDelayMs * 2 ** Math.min(n - 1, 40), s.maxDelayMs);
}

/**
 * How long to wait after failed attempt `attempt` before the next one: "equal jitter" (AWS architecture
 * blog), uniform in [ceiling/2, ceiling), so retries of many items spread out instead of arriving
 * together, while each wait is still at least half its ceiling (a short outage is waited out, never
 * retried into at once). `random` (default Math.random, values in [0, 1)) is injectable for deterministic tests.
 */
export function backoffMs(attempt: number, random: () => number = Math.random, s: RetrySchedule = LEGACY_SCHEDULE): number {
  const r = Math.min(Math.max(random(), 0), 1);
  const ceiling = backoffCeilingMs(attempt, s);
  return Math.floor(ceiling / 2 + (r * ceiling) / 2);
}

/** The sum of the waits' ceilings over a whole schedule (the longest an item can take, without deliveries' own time). Pure. */
export function scheduleSpanMs(s: RetrySchedule): number {
  let total = 0;
  for (let n = 1; n < s.maxAttempts; n++) total += backoffCeilingMs(n, s);
  return total;
}
