/**
 * How a finished replay ended, from its status and its counts. Pure; the one place that decides it, used
 * by the API (ReplaySummary.outcome), the CLI, the console (wizard, list, detail, Overview) and the
 * Overview's query. Separate from a running replay's health (health.ts): a replay is either running or
 * paused (it has a health) or finished (it has an outcome).
 *
 *   succeeded  completed and every item was delivered
 *   partial    completed, some items delivered and some not (failed or skipped as unsafe)
 *   failed     completed and no item was delivered (all failed or were skipped as unsafe)
 *   cancelled  cancelled by an operator (whatever was delivered before stays delivered)
 *   null       still running or paused
 */
import type { Outcome, ReplayStatus } from "./schema";

export const REPLAY_OUTCOMES = ["succeeded", "partial", "failed", "cancelled"] as const;
export type ReplayOutcome = (typeof REPLAY_OUTCOMES)[number];

/** The colour each outcome is shown in (the console's status--* classes): all failed is red, whatever "completed" means. */
export const OUTCOME_TONE: Record<ReplayOutcome, "ok" | "warn" | "error" | "off"> = {
  succeeded: "ok",
  partial: "warn",
  failed: "error",
  cancelled: "off",
};

export function replayOutcome(r: { status: ReplayStatus; total: number; counts: Partial<Record<Outcome, number>> }): ReplayOutcome | null {
  if (r.status === "cancelled") return "cancelled";
  if (r.status !== "completed") return null;
  const delivered = r.counts.delivered ?? 0;
  if (delivered >= r.total) return "succeeded";
  return delivered === 0 ? "failed" : "partial";
}

/** The outcome in a sentence, with the numbers it comes from ("4 of 4 failed"). Pure. */
export function describeOutcome(outcome: ReplayOutcome, r: { total: number; counts: Partial<Record<Outcome, number>> }): string {
  const c = (k: Outcome) => r.counts[k] ?? 0;
  const notDelivered = c("failed") + c("skipped_unsafe");
  switch (outcome) {
    case "succeeded":
      return `all ${r.total} delivered`;
    case "failed":
      return `none of ${r.total} delivered (${c("failed")} failed${c("skipped_unsafe") ? `, ${c("skipped_unsafe")} skipped as unsafe` : ""})`;
    case "partial":
      return `${c("delivered")} of ${r.total} delivered, ${notDelivered} not`;
    case "cancelled":
      return `cancelled after ${c("delivered")} of ${r.total} delivered`;
  }
}

/** A replay's state in the list's filter: running (running or paused: it has a health) or finished (it has an outcome). */
export const REPLAY_STATES = ["running", "finished"] as const;
export type ReplayState = (typeof REPLAY_STATES)[number];

/**
 * The same decision as replayOutcome, as a SQL condition on a replay row aliased `r` (GET /api/v1/replays?outcome=):
 * `delivered` is an SQL expression counting its delivered items. Kept beside replayOutcome so the two change together
 * (test/replay/replays.db.test.ts checks that every listed replay's outcome is the one filtered on).
 */
export function outcomeCondition(outcome: ReplayOutcome, delivered: string): string {
  switch (outcome) {
    case "cancelled":
      return "r.status = 'cancelled'";
    case "succeeded":
      return `(r.status = 'completed' AND ${delivered} >= r.total)`;
    case "failed":
      return `(r.status = 'completed' AND ${delivered} = 0 AND r.total > 0)`;
    case "partial":
      return `(r.status = 'completed' AND ${delivered} > 0 AND ${delivered} < r.total)`;
  }
}

/** The statuses of each state (REPLAY_STATES). */
export const STATE_STATUSES: Record<ReplayState, readonly ReplayStatus[]> = {
  running: ["running", "paused"],
  finished: ["completed", "cancelled"],
};
