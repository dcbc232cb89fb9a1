/**
 * One replay item's attempts: what to do after an attempt (pure), and the results the executor records
 * for an item (settle-queue.ts writes them, a batch per statement).
 */
import { MAX_ATTEMPTS } from "./backoff";

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

/**
 * The result of one leased item, as recorded. `retry` goes back to pending after `delayMs` (cancelled when
 * the replay was cancelled meanwhile). `status` and `error` are those of one and the same attempt (or the
 * reason an item was not sent); with `touchLast` false (a delivery our own stop interrupted, an item given
 * back unsent) the item keeps the status and error it had.
 */
export type ItemResult = {
  deadLetterId: string;
  outcome: "delivered" | "failed" | "skipped_unsafe" | "retry";
  /** Whether this was an attempt the destination answered (or failed to answer). */
  attempt: boolean;
  status: number | null;
  error: string | null;
  touchLast: boolean;
  delayMs: number;
  /** A forced replay's expired_processed item (the audit row says so). */
  forced: boolean;
  /** The attempt's evidence (kept in replay_attempts), when `attempt`. */
  evidence: AttemptEvidence | null;
};

/** What one attempt leaves behind besides its status and error. */
export type AttemptEvidence = { at: Date; destination: string; latencyMs: number; responseBody: string | null };

/** An item given back unsent (a stop, a pause, a cancel): pending again at once, nothing counted. */
export const givenBack = (deadLetterId: string, forced: boolean): ItemResult => ({
  deadLetterId,
  outcome: "retry",
  attempt: false,
  status: null,
  error: null,
  touchLast: false,
  delayMs: 0,
  forced,
  evidence: null,
});

/** An item settled without an attempt (skipped as unsafe, its letter gone), with the reason as its error. */
export const notSent = (deadLetterId: string, outcome: "failed" | "skipped_unsafe", reason: string, forced: boolean): ItemResult => ({
  deadLetterId,
  outcome,
  attempt: false,
  status: null,
  error: reason,
  touchLast: true,
  delayMs: 0,
  forced,
  evidence: null,
});

/** One attempt as the API answers it (GET /api/v1/dead-letters/{id}/attempts). */
export type ReplayAttempt = {
  id: string;
  replayId: string;
  /** 1-based, per replay. */
  attempt: number;
  at: string;
  destination: string;
  status: number | null;
  latencyMs: number;
  /** The first 2 KiB of the answer as text (UTF-8, invalid bytes as U+FFFD), null without an answer. */
  responseBody: string | null;
  error: string | null;
  /** What the attempt led to. */
  outcome: "delivered" | "retry" | "failed" | "cancelled";
};
