/**
 * One replay item's attempts: what to do after an attempt (pure), and the results the executor records
 * for an item (settle-queue.ts writes them, a batch per statement).
 */
import { MAX_ATTEMPTS } from "./backoff";
import { SEND_MARGIN_SECONDS } from "./classify";
import type { HeaderPair } from "./send";

/** What to do with an item after one delivery attempt (`maxAttempts`: the replay's schedule's). Pure. */
export function afterAttempt(
  result: { ok: boolean; retryable: boolean; error: string | null },
  attemptsBefore: number,
  maxAttempts: number = MAX_ATTEMPTS,
): { outcome: "delivered" | "failed" | "retry"; countsAsAttempt: boolean } {
  if (result.ok) return { outcome: "delivered", countsAsAttempt: true };
  // A delivery aborted by our own stop was not an attempt the destination answered.
  if (result.error === "aborted") return { outcome: "retry", countsAsAttempt: false };
  if (result.retryable && attemptsBefore + 1 < maxAttempts) return { outcome: "retry", countsAsAttempt: true };
  return { outcome: "failed", countsAsAttempt: true };
}

/**
 * When to retry a failed item, or why not: its next attempt comes `delayMs` after `now`, unless that is
 * less than SEND_MARGIN_SECONDS before its dedup key expires (`keyExpiresAt`, as read for the send): a
 * replay after the key is gone may process the event twice (the pre-send re-check would skip it then), so
 * the item fails now, with the reason, and can be retried after an extend. A forced item (its key is
 * already gone, sent on an operator's reason) and one without a key are not bounded. Pure.
 */
export function retryOrGiveUp(
  delayMs: number,
  now: Date,
  keyExpiresAt: Date | null,
  forced: boolean,
): { retry: true; delayMs: number } | { retry: false; reason: string } {
  if (forced || !keyExpiresAt || keyExpiresAt.getTime() <= now.getTime()) return { retry: true, delayMs };
  const at = now.getTime() + delayMs;
  if (at + SEND_MARGIN_SECONDS * 1000 < keyExpiresAt.getTime()) return { retry: true, delayMs };
  return {
    retry: false,
    reason:
      `not retried: the next attempt (at ${new Date(at).toISOString()}) would come less than ${SEND_MARGIN_SECONDS} s before its key ` +
      `expires at ${keyExpiresAt.toISOString()}, and a replay after expiry is unsafe; extend the key and retry the failed items`,
  };
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
export type AttemptEvidence = {
  at: Date;
  destination: string;
  latencyMs: number;
  responseBody: string | null;
  /** The headers sent (secrets masked: evidence.ts) and the answer's (HTTP only), in order. */
  requestHeaders: HeaderPair[];
  responseHeaders: HeaderPair[] | null;
};

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

/** One attempt as the API answers it: declared with its schema (./schema.ts). */
export type { ReplayAttempt } from "./schema";
