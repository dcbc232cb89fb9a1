/** The wizard's retry schedule (components/replay/retry-schedule.ts): presets, typed fields checked as the server checks them, the keys' bound. */
import { describe, expect, it } from "vitest";
import { checkRetry, describeSpan, keyBound, type RetryState } from "@/components/replay/retry-schedule";
import { retryScheduleRequest } from "@/lib/replay/schema";

const DEFAULT = { maxAttempts: 12, initialDelaySeconds: 10, maxDelaySeconds: 3600 };
const custom = (attempts: string, firstDelay: string, maxDelay: string): RetryState => ({ preset: "custom", attempts, firstDelay, maxDelay });
const NOW = Date.parse("2026-12-03T12:00:00Z");
const at = (mins: number) => new Date(NOW + mins * 60_000).toISOString();
const item = (category: "alive" | "expiring" | "never_processed" | "expired_processed", keyExpiresAt: string | null) => ({
  deadLetterId: "d", eventId: "e", eventType: "t", category, keyExpiresAt, processedAt: null, reason: "",
});

describe("checkRetry", () => {
  it("sends nothing for the default, the preset's values for a preset, the typed ones for custom", () => {
    expect(checkRetry({ preset: "default", attempts: "", firstDelay: "", maxDelay: "" }, DEFAULT)).toEqual({ ok: true, body: undefined, schedule: DEFAULT });
    expect(checkRetry({ preset: "quick", attempts: "", firstDelay: "", maxDelay: "" }, DEFAULT)).toMatchObject({ ok: true, body: { maxAttempts: 5, initialDelaySeconds: 1, maxDelaySeconds: 16 } });
    expect(checkRetry(custom("3", "0.5", "2"), DEFAULT)).toEqual({ ok: true, body: { maxAttempts: 3, initialDelaySeconds: 0.5, maxDelaySeconds: 2 }, schedule: { maxAttempts: 3, initialDelaySeconds: 0.5, maxDelaySeconds: 2 } });
  });

  it("refuses what the server refuses (422), one sentence per field", () => {
    for (const [state, problem] of [
      [custom("0", "1", "2"), /Attempts must be a whole number from 1 to 100/],
      [custom("2.5", "1", "2"), /Attempts/],
      [custom("101", "1", "2"), /Attempts/],
      [custom("3", "", "2"), /first wait/],
      [custom("3", "0", "2"), /first wait/],
      [custom("3", "10", "5"), /longest wait must not be shorter than the first/],
      [custom("3", "1", "90000"), /longest wait must be a number of seconds above 0, at most 86400/],
    ] as const) {
      const r = checkRetry(state, DEFAULT);
      expect(r.ok, JSON.stringify(state)).toBe(false);
      if (!r.ok) expect(r.problems.join(" ")).toMatch(problem);
      // The server's schema refuses the same values.
      expect(retryScheduleRequest.safeParse({ maxAttempts: Number(state.attempts), initialDelaySeconds: state.firstDelay === "" ? undefined : Number(state.firstDelay), maxDelaySeconds: Number(state.maxDelay) }).success && state.firstDelay !== "").toBe(false);
    }
  });

  it("says what a schedule spans in all", () => {
    expect(describeSpan(DEFAULT)).toBe("3h25m10s");
    expect(describeSpan({ maxAttempts: 5, initialDelaySeconds: 1, maxDelaySeconds: 16 })).toBe("15 s");
  });
});

describe("keyBound", () => {
  const p = { items: [item("alive", at(30)), item("alive", at(600)), item("never_processed", null), item("expired_processed", at(-5)), item("expiring", at(10))] };
  it("names the included live keys that expire before the schedule's last retry (plus the executor's minute), the soonest first", () => {
    expect(keyBound(p, ["alive", "never_processed"], DEFAULT, NOW)).toEqual({ keys: 1, soonest: at(30), spanMs: 12_310_000 });
    expect(keyBound(p, ["alive", "expiring"], DEFAULT, NOW)).toMatchObject({ keys: 2, soonest: at(10) });
  });
  it("is null when no included key expires within it: a short schedule, or items without a live key", () => {
    expect(keyBound(p, ["alive"], { maxAttempts: 5, initialDelaySeconds: 1, maxDelaySeconds: 16 }, NOW)).toBeNull();
    expect(keyBound(p, ["never_processed", "expired_processed"], DEFAULT, NOW)).toBeNull();
  });
});
