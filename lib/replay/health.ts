/**
 * A replay's health, computed when it is read (GET /api/v1/replays, /replays/{id}, the Overview, the CLI)
 * from what the executor records with each batch of results. Pure.
 *
 *   stalled  running, and no item's result was recorded for stallAfterMs (since the last result, since it
 *            started or was resumed, or since its next retry came due; an item waiting for a retry
 *            that is not due yet is no stall): no worker drives it (none running, or one that died and whose
 *            lease has not lapsed yet), the database does not answer, or deliveries hang.
 *   failing  running or paused, and the last FAILING_AFTER attempts or more all failed (since the last
 *            delivery or resume): the destination refuses or does not answer.
 *   ok       running or paused, and neither of the above.
 *   finished completed or cancelled: health no longer applies; its outcome (outcome.ts) tells how it
 *            ended (a finished replay is never "ok" because its last attempts failed, nor because they did not).
 * stalled wins over failing: nothing moves at all.
 */
import { backoffCeilingMs, MAX_ATTEMPTS } from "./backoff";
import type { ReplayStatus } from "./schema";

export const HEALTH_STATES = ["ok", "stalled", "failing", "finished"] as const;
export type HealthState = (typeof HEALTH_STATES)[number];

/** Consecutive failed attempts that make a replay `failing`. */
export const FAILING_AFTER = 5;
/** A replay is stalled after this many expected intervals (1 / ratePerSecond) without a result… */
export const STALL_INTERVALS = 30;
/** …but never sooner than a delivery's timeout plus the longest retry wait plus this slack. */
export const STALL_SLACK_MS = 5000;

/**
 * How long a running replay may go without a recorded result before it is stalled: STALL_INTERVALS times
 * the interval its rate sets, at least the delivery timeout plus the longest wait between two attempts
 * (a healthy replay whose last items wait for a retry records nothing meanwhile) plus STALL_SLACK_MS.
 * Defaults (10 s timeout): 23 s at any rate of 2/s or more; 30 s at 1/s. Pure.
 */
export function stallAfterMs(ratePerSecond: number, timeoutMs: number): number {
  const floor = timeoutMs + backoffCeilingMs(MAX_ATTEMPTS - 1) + STALL_SLACK_MS;
  return Math.max(floor, Math.ceil((STALL_INTERVALS * 1000) / ratePerSecond));
}

export type ReplayHealth = {
  state: HealthState;
  /** Why, in a sentence (null when ok). */
  reason: string | null;
  /** When the last result of an item was recorded (null: none yet). */
  lastSettledAt: string | null;
  /** Failed attempts since the last delivery (or since it was resumed). */
  consecutiveFailures: number;
  /** The latest failed attempt's error (or why the executor paused the replay), and when. */
  lastError: string | null;
  lastErrorAt: string | null;
};

export type HealthInput = {
  status: ReplayStatus;
  ratePerSecond: number;
  runningSince: Date;
  lastSettledAt: Date | null;
  consecutiveFailures: number;
  lastError: string | null;
  lastErrorAt: Date | null;
  /**
   * When its earliest pending item is (or was) due: items never attempted are due from the start, one waiting
   * for a retry at its next attempt (null or left out: none pending). Read with DUE_AT_SQL.
   */
  dueAt?: Date | null;
};

/**
 * The `due_at` column replayHealth's `dueAt` comes from, for the `replays` row named `replay`: the earliest
 * next attempt of any pending item (replay_items_pending_due_idx: one index entry). Not only the items waiting
 * for a retry: one of those due in an hour must not hide the due items nobody sends.
 */
export const dueAtSql = (replay: string) =>
  `(SELECT min(next_attempt_at) FROM replay_items i WHERE i.replay_id = ${replay}.id AND i.outcome = 'pending') AS due_at`;

const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;

/** The health of a replay at `now` (the database's clock), with deliveries timing out after `timeoutMs`. */
export function replayHealth(r: HealthInput, now: Date, timeoutMs: number): ReplayHealth {
  const base = {
    lastSettledAt: r.lastSettledAt?.toISOString() ?? null,
    consecutiveFailures: r.consecutiveFailures,
    lastError: r.lastError,
    lastErrorAt: r.lastErrorAt?.toISOString() ?? null,
  };
  if (r.status === "completed" || r.status === "cancelled") return { state: "finished", reason: null, ...base };
  // Waiting for a retry that is not due yet (the schedule may wait an hour) is no stall: the clock runs
  // from when the earliest pending item became due.
  const due = r.dueAt?.getTime() ?? 0;
  if (r.status === "running" && due <= now.getTime()) {
    const since = Math.max(r.runningSince.getTime(), r.lastSettledAt?.getTime() ?? 0, due);
    const idle = now.getTime() - since;
    const limit = stallAfterMs(r.ratePerSecond, timeoutMs);
    if (idle > limit) {
      const what = r.lastSettledAt && r.lastSettledAt.getTime() >= r.runningSince.getTime() ? "no item's result recorded" : "nothing recorded since it started running";
      return { state: "stalled", reason: `${what} for ${seconds(idle)} (stalled after ${seconds(limit)} at ${r.ratePerSecond}/s)`, ...base };
    }
  }
  if ((r.status === "running" || r.status === "paused") && r.consecutiveFailures >= FAILING_AFTER) {
    return { state: "failing", reason: `the last ${r.consecutiveFailures} attempts failed${r.lastError ? `; the latest: ${r.lastError}` : ""}`, ...base };
  }
  return { state: "ok", reason: null, ...base };
}
