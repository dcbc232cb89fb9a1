/**
 * A replay's progress and results in words: items settled, how often to poll, which controls apply,
 * the outcome rows and the one-line headline (a finished replay leads with its outcome from
 * lib/replay/outcome.ts), waits and the retry schedule. Pure; unit-tested in test/replay/console-view.unit.test.ts.
 */
import { formatCount } from "@/components/ui/format";
import { replayOutcome, type ReplayOutcome } from "@/lib/replay/outcome";
import type { Outcome as ItemOutcome, ReplayStatus, ReplaySummary } from "@/lib/replay/schema";
import { formatDuration } from "@/lib/sources/duration";

export const OUTCOMES: readonly ItemOutcome[] = ["delivered", "failed", "skipped_unsafe", "cancelled", "delivering", "pending"];

export const OUTCOME_LABEL: Record<ItemOutcome, string> = {
  pending: "Waiting",
  delivering: "Sending",
  delivered: "Delivered",
  failed: "Failed",
  skipped_unsafe: "Skipped (became unsafe)",
  cancelled: "Cancelled",
};

export function isFinished(status: ReplayStatus): boolean {
  return status === "completed" || status === "cancelled";
}

/** Items settled so far (delivered, failed, skipped, cancelled) and their share of the total, 0–100 (whole). */
export function replayProgress(r: Pick<ReplaySummary, "total" | "counts" | "status">): { done: number; percent: number } {
  const c = r.counts;
  const done = (c.delivered ?? 0) + (c.failed ?? 0) + (c.skipped_unsafe ?? 0) + (c.cancelled ?? 0);
  if (r.total <= 0) return { done, percent: isFinished(r.status) ? 100 : 0 };
  // Floor, so 100 % means every item settled.
  return { done, percent: Math.min(100, Math.floor((done / r.total) * 100)) };
}

/** How often the progress view polls: every second while running, slower while paused, not when done. */
export function pollInterval(status: ReplayStatus | undefined): number | false {
  if (status === "running") return 1000;
  if (status === "paused") return 5000;
  return status === undefined ? 1000 : false;
}

/** Which controls a replay offers in its state (the server refuses the others with 409). */
export function replayControls(status: ReplayStatus): { pause: boolean; resume: boolean; cancel: boolean } {
  return { pause: status === "running", resume: status === "paused", cancel: status === "running" || status === "paused" };
}

/** The outcome counts worth showing: settled ones always, in-progress ones only while non-zero. */
export function outcomeRows(counts: Record<ItemOutcome, number>): { outcome: ItemOutcome; label: string; count: number }[] {
  return OUTCOMES.filter((o) => (o !== "pending" && o !== "delivering") || (counts[o] ?? 0) > 0).map((o) => ({
    outcome: o,
    label: OUTCOME_LABEL[o],
    count: counts[o] ?? 0,
  }));
}

const OUTCOME_HEADLINE: Record<ReplayOutcome, string> = { succeeded: "Succeeded", partial: "Partly delivered", failed: "Failed", cancelled: "Cancelled" };

/** A one-line summary of a replay, for the list and the results heading: a finished one leads with its outcome. */
export function replayHeadline(r: Pick<ReplaySummary, "total" | "counts" | "status">): string {
  const { done } = replayProgress(r);
  const c = r.counts;
  const outcome = replayOutcome(r);
  if (outcome) {
    const parts = [`${formatCount(c.delivered)} delivered`];
    if (c.failed) parts.push(`${formatCount(c.failed)} failed`);
    if (c.skipped_unsafe) parts.push(`${formatCount(c.skipped_unsafe)} skipped as unsafe`);
    if (c.cancelled) parts.push(`${formatCount(c.cancelled)} cancelled`);
    return `${OUTCOME_HEADLINE[outcome]}: ${parts.join(", ")} of ${formatCount(r.total)}.`;
  }
  return `${formatCount(done)} of ${formatCount(r.total)} settled${r.status === "paused" ? " (paused)" : ""}.`;
}

/** When a waiting item's next attempt is due, from now: "in 42 s", "in 3m", "in 1h5m", "due now". Pure. */
export function describeWait(iso: string, nowMs: number): string {
  const ms = Date.parse(iso) - nowMs;
  if (ms <= 500) return "due now";
  if (ms < 60_000) return `in ${Math.ceil(ms / 1000)} s`;
  return `in ${formatDuration(Math.round(ms / 60_000) * 60)}`;
}

/** A replay's retry schedule in words: "up to 12 attempts, waits from 10s doubling to 1h (jittered)". Pure. */
export function describeSchedule(r: { maxAttempts: number; initialDelaySeconds: number; maxDelaySeconds: number }): string {
  const span = (s: number) => (s < 1 ? `${Math.round(s * 1000)} ms` : s < 60 && !Number.isInteger(s) ? `${s} s` : formatDuration(Math.round(s)));
  if (r.maxAttempts <= 1) return "1 attempt, no retries";
  return `up to ${r.maxAttempts} attempts, waits from ${span(r.initialDelaySeconds)} doubling to ${span(r.maxDelaySeconds)} (jittered)`;
}
