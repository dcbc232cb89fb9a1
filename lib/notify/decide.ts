/**
 * What the notification evaluator does with each condition, from what it found now and what it recorded
 * before. Pure (evaluate.ts does the I/O).
 *
 * - A condition that starts firing is announced (`firing`) unless a firing message for it went out less
 *   than `throttleMs` ago: then it is recorded unannounced, and announced at the first evaluation after the
 *   throttle has passed, if it still fires.
 * - A condition still firing and announced is reminded (`reminder`) once per `throttleMs` (none when the
 *   throttle is 0).
 * - A condition that clears gets a `resolved` message if its firing was announced; one that was never
 *   announced clears silently. Resolved messages are never throttled: each announced firing ends with one.
 * So a condition sends at most one firing or reminder per throttle period, plus the resolved message of
 * each announced firing. A delivery that fails changes nothing recorded, so the next evaluation tries again.
 */
import type { ConditionKind, MessageKind } from "./schema";

/** A condition found now (conditions.ts). */
export type ActiveCondition = {
  key: string;
  kind: ConditionKind;
  source: string | null;
  summary: string;
  /** The console page that shows it (a path), or null. */
  path: string | null;
};

/** What is recorded about a condition (notification_conditions). */
export type ConditionState = {
  key: string;
  kind: ConditionKind;
  source: string | null;
  summary: string;
  firing: boolean;
  since: Date;
  announced: boolean;
  lastSentAt: Date | null;
};

export type Step = {
  /** The message to send first (null: only record `next`). */
  send: Exclude<MessageKind, "test"> | null;
  /** The condition the message is about (for a resolved one: as it was last recorded). */
  condition: ActiveCondition;
  /** What to record once the message is delivered (or at once, without a message). */
  next: ConditionState;
};

/** The console page that shows a condition (its key is `<kind>:<subject>`). Pure. */
export function conditionPath(kind: ConditionKind, key: string, source: string | null): string | null {
  const subject = key.slice(key.indexOf(":") + 1);
  switch (kind) {
    case "replay_failing":
    case "replay_stalled":
      return `/replays/${subject}`;
    case "keys_at_risk":
      return source ? `/replay?source=${encodeURIComponent(source)}` : "/replay";
    case "late_duplicates":
      return source ? `/sources/${encodeURIComponent(source)}` : "/sources";
    case "pruning_failing":
      return "/";
  }
}

export function decideNotifications(
  previous: readonly ConditionState[],
  active: readonly ActiveCondition[],
  now: Date,
  throttleMs: number,
): Step[] {
  const before = new Map(previous.map((s) => [s.key, s]));
  const steps: Step[] = [];
  const elapsed = (at: Date | null) => (at === null ? Number.POSITIVE_INFINITY : now.getTime() - at.getTime());
  const mayAnnounce = (s: ConditionState | undefined) => elapsed(s?.lastSentAt ?? null) >= throttleMs;

  for (const a of active) {
    const p = before.get(a.key);
    const base = { key: a.key, kind: a.kind, source: a.source, summary: a.summary, firing: true };
    if (!p || !p.firing) {
      const lastSentAt = p?.lastSentAt ?? null;
      if (mayAnnounce(p)) steps.push({ send: "firing", condition: a, next: { ...base, since: now, announced: true, lastSentAt: now } });
      else steps.push({ send: null, condition: a, next: { ...base, since: now, announced: false, lastSentAt } });
    } else if (!p.announced) {
      if (mayAnnounce(p)) steps.push({ send: "firing", condition: a, next: { ...base, since: p.since, announced: true, lastSentAt: now } });
      else if (p.summary !== a.summary) steps.push({ send: null, condition: a, next: { ...p, summary: a.summary } });
    } else if (throttleMs > 0 && elapsed(p.lastSentAt) >= throttleMs) {
      steps.push({ send: "reminder", condition: a, next: { ...base, since: p.since, announced: true, lastSentAt: now } });
    } else if (p.summary !== a.summary) {
      steps.push({ send: null, condition: a, next: { ...p, summary: a.summary } });
    }
  }

  const still = new Set(active.map((a) => a.key));
  for (const p of previous) {
    if (!p.firing || still.has(p.key)) continue;
    const condition: ActiveCondition = { key: p.key, kind: p.kind, source: p.source, summary: p.summary, path: conditionPath(p.kind, p.key, p.source) };
    const next: ConditionState = { ...p, firing: false, since: now, announced: false };
    steps.push({ send: p.announced ? "resolved" : null, condition, next });
  }
  return steps;
}
