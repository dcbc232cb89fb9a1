/**
 * The wizard's retry schedule (confirm step): a preset or three typed fields, checked with the server's own
 * schema (lib/replay/schema.ts retryScheduleRequest: the server answers 422 for the same values), and the
 * bound the keys' remaining life puts on it (a retry after its key expires is unsafe: the executor gives
 * the item up instead, lib/replay/attempts.ts retryOrGiveUp). Pure; unit-tested in test/replay/retry-schedule.unit.test.ts.
 */
import { scheduleSpanMs, type RetrySchedule } from "@/lib/replay/backoff";
import { MAX_RETRY_ATTEMPTS, MAX_RETRY_DELAY_SECONDS, retryScheduleRequest, type Category, type Preflight } from "@/lib/replay/schema";
import { formatDuration } from "@/lib/sources/duration";

/** A schedule as the start request and the replay's answer write it (seconds). */
export type RetryFields = { maxAttempts: number; initialDelaySeconds: number; maxDelaySeconds: number };

export const RETRY_PRESETS = [
  { id: "default", label: "Default" },
  { id: "quick", label: "Quick", schedule: { maxAttempts: 5, initialDelaySeconds: 1, maxDelaySeconds: 16 } },
  { id: "patient", label: "Patient", schedule: { maxAttempts: 24, initialDelaySeconds: 30, maxDelaySeconds: 3600 } },
  { id: "custom", label: "Custom" },
] as const satisfies readonly { id: string; label: string; schedule?: RetryFields }[];
export type RetryPresetId = (typeof RETRY_PRESETS)[number]["id"];

/** The confirm form's retry fields as typed. */
export type RetryState = { preset: RetryPresetId; attempts: string; firstDelay: string; maxDelay: string };

export const toMs = (r: RetryFields): RetrySchedule => ({
  maxAttempts: r.maxAttempts,
  initialDelayMs: Math.round(r.initialDelaySeconds * 1000),
  maxDelayMs: Math.round(r.maxDelaySeconds * 1000),
});

/** The longest an item can wait in all under a schedule, as text ("about 3h25m"). */
export function describeSpan(r: RetryFields): string {
  const s = scheduleSpanMs(toMs(r)) / 1000;
  return s < 1 ? "under a second" : s < 60 ? `${Math.round(s)} s` : formatDuration(Math.round(s));
}

/**
 * The schedule the form stands for (`body`: the start request's `retry`, left out for the default) or every
 * reason it cannot be sent, one sentence each.
 */
export function checkRetry(
  state: RetryState,
  retryDefault: RetryFields,
): { ok: true; body: RetryFields | undefined; schedule: RetryFields } | { ok: false; problems: string[] } {
  if (state.preset === "default") return { ok: true, body: undefined, schedule: retryDefault };
  const preset = RETRY_PRESETS.find((p) => p.id === state.preset);
  if (preset && "schedule" in preset) return { ok: true, body: preset.schedule, schedule: preset.schedule };
  const number = (s: string) => (s.trim() === "" ? NaN : Number(s.trim()));
  const candidate = { maxAttempts: number(state.attempts), initialDelaySeconds: number(state.firstDelay), maxDelaySeconds: number(state.maxDelay) };
  const problems: string[] = [];
  const fields = retryScheduleRequest.safeParse(candidate);
  if (!fields.success) {
    const bad = new Set(fields.error.issues.map((i) => String(i.path[0])));
    if (bad.has("maxAttempts")) problems.push(`Attempts must be a whole number from 1 to ${MAX_RETRY_ATTEMPTS}.`);
    if (bad.has("initialDelaySeconds")) problems.push(`The first wait must be a number of seconds above 0, at most ${MAX_RETRY_DELAY_SECONDS} (a day).`);
    if (bad.has("maxDelaySeconds")) {
      problems.push(
        Number.isFinite(candidate.maxDelaySeconds) && candidate.maxDelaySeconds > 0 && candidate.maxDelaySeconds <= MAX_RETRY_DELAY_SECONDS
          ? "The longest wait must not be shorter than the first."
          : `The longest wait must be a number of seconds above 0, at most ${MAX_RETRY_DELAY_SECONDS} (a day).`,
      );
    }
    return { ok: false, problems };
  }
  const body = fields.data as RetryFields;
  return { ok: true, body, schedule: body };
}

/**
 * Where the keys' remaining life cuts the schedule short: the included items whose key expires before the
 * schedule's last retry could come (now + its span, plus the executor's margin). Their retries stop there
 * (the item fails with "not retried: … before its key expires"). Null when no key bounds it. Forced
 * (expired_processed) and never-processed items have no live key: nothing bounds them.
 */
export function keyBound(
  p: Pick<Preflight, "items">,
  include: readonly Category[],
  schedule: RetryFields,
  nowMs: number,
  marginSeconds = 60,
): { keys: number; soonest: string; spanMs: number } | null {
  const spanMs = scheduleSpanMs(toMs(schedule));
  const end = nowMs + spanMs + marginSeconds * 1000;
  const bounded = p.items.filter(
    (i) => include.includes(i.category) && (i.category === "alive" || i.category === "expiring") && i.keyExpiresAt !== null && Date.parse(i.keyExpiresAt) < end,
  );
  if (bounded.length === 0) return null;
  const soonest = bounded.reduce((a, b) => (Date.parse(b.keyExpiresAt!) < Date.parse(a.keyExpiresAt!) ? b : a)).keyExpiresAt!;
  return { keys: bounded.length, soonest, spanMs };
}
