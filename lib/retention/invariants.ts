/**
 * Invariant checks on a source's retention, shown in the console and the API. Pure; unit-tested.
 *
 * A key claimed at t0 lives until t0 + TTL. The sender may retry until t0 + retry window; the event may
 * sit in our queue for the queue-lag margin; a dead letter made at the latest then is kept for the
 * dead-letter retention, and may be re-driven until the end of it. Every one of those deliveries must
 * meet a live key, or it is processed twice.
 */
import { formatDuration } from "@/lib/sources/duration";
import { ttlFloorFor, type SourceParts } from "./presets";

export type Invariant = { id: string; ok: boolean; message: string };

export type RetentionFacts = SourceParts & {
  ttlSeconds: number;
  deadLetterRetentionSeconds: number | null;
  /** How long the audit history is kept (KEYWARD_AUDIT_RETENTION_DAYS). */
  auditRetentionSeconds: number;
};

const f = formatDuration;

export function checkInvariants(s: RetentionFacts): Invariant[] {
  const out: Invariant[] = [];
  const floor = ttlFloorFor(s.retryWindowSeconds);
  out.push({
    id: "ttl_floor",
    ok: s.ttlSeconds >= floor,
    message:
      s.ttlSeconds >= floor
        ? `TTL ${f(s.ttlSeconds)} meets the floor of ${f(floor)} for a ${f(s.retryWindowSeconds)} retry window`
        : `TTL ${f(s.ttlSeconds)} is below the floor of ${f(floor)} the design sets for a ${f(s.retryWindowSeconds)} retry window: late retries and replays may be processed twice`,
  });
  const margins: string[] = [];
  if (s.queueLagSeconds === 0) margins.push("queue lag");
  if (s.clockSkewSeconds === 0) margins.push("clock skew");
  if (s.replaySeconds === 0) margins.push("replay");
  out.push({
    id: "margins",
    ok: margins.length === 0,
    message:
      margins.length === 0
        ? "TTL covers the retry window plus queue-lag, clock-skew and replay margins"
        : `TTL is not more than the retry window plus margins: the ${margins.join(", ")} margin${margins.length > 1 ? "s are" : " is"} zero`,
  });
  out.push({
    id: "audit_outlives_keys",
    ok: s.auditRetentionSeconds >= s.ttlSeconds,
    message:
      s.auditRetentionSeconds >= s.ttlSeconds
        ? `audit history (${f(s.auditRetentionSeconds)}) outlives the keys (${f(s.ttlSeconds)})`
        : `audit history is kept ${f(s.auditRetentionSeconds)}, less than the key TTL ${f(s.ttlSeconds)}: "did we process X?" loses its answer while the key still exists`,
  });
  if (s.deadLetterRetentionSeconds !== null) {
    // Safe while retry + lag + dead-letter retention ≤ TTL, i.e. the letter ≤ skew + replay margins.
    const room = s.clockSkewSeconds + s.replaySeconds;
    const ok = s.deadLetterRetentionSeconds <= room;
    out.push({
      id: "dead_letters_within_keys",
      ok,
      message: ok
        ? `dead letters (kept ${f(s.deadLetterRetentionSeconds)}) expire before their keys can`
        : `dead letters are kept ${f(s.deadLetterRetentionSeconds)}, but a letter made at the end of the retry window and queue lag only has ${f(room)} of key life left: replaying it later processes it twice. Shorten the dead-letter retention or raise the replay margin to ${f(s.deadLetterRetentionSeconds - s.clockSkewSeconds)}`,
    });
  }
  return out;
}
