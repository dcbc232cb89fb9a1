/** A finished replay's outcome (lib/replay/outcome.ts) and a running one's health are separate (issue 23 item 1). Pure. */
import { describe, expect, it } from "vitest";
import { replayHealth } from "@/lib/replay/health";
import { describeOutcome, OUTCOME_TONE, replayOutcome } from "@/lib/replay/outcome";

const counts = (c: Partial<Record<"delivered" | "failed" | "skipped_unsafe" | "cancelled" | "pending" | "delivering", number>>) => ({
  pending: 0, delivering: 0, delivered: 0, failed: 0, skipped_unsafe: 0, cancelled: 0, ...c,
});

describe("replayOutcome", () => {
  it("derives succeeded, partial, failed and cancelled from the status and counts; null while running or paused", () => {
    expect(replayOutcome({ status: "completed", total: 4, counts: counts({ delivered: 4 }) })).toBe("succeeded");
    expect(replayOutcome({ status: "completed", total: 4, counts: counts({ delivered: 3, failed: 1 }) })).toBe("partial");
    expect(replayOutcome({ status: "completed", total: 4, counts: counts({ delivered: 2, skipped_unsafe: 2 }) })).toBe("partial");
    expect(replayOutcome({ status: "completed", total: 4, counts: counts({ failed: 4 }) })).toBe("failed");
    expect(replayOutcome({ status: "completed", total: 4, counts: counts({ failed: 1, skipped_unsafe: 3 }) })).toBe("failed");
    expect(replayOutcome({ status: "cancelled", total: 4, counts: counts({ delivered: 4 }) })).toBe("cancelled");
    expect(replayOutcome({ status: "running", total: 4, counts: counts({ failed: 4 }) })).toBeNull();
    expect(replayOutcome({ status: "paused", total: 4, counts: counts({ pending: 4 }) })).toBeNull();
  });

  it("colours all-failed red and words it with its numbers", () => {
    expect(OUTCOME_TONE.failed).toBe("error");
    expect(OUTCOME_TONE.succeeded).toBe("ok");
    expect(OUTCOME_TONE.partial).toBe("warn");
    expect(describeOutcome("failed", { total: 4, counts: counts({ failed: 4 }) })).toBe("none of 4 delivered (4 failed)");
    expect(describeOutcome("partial", { total: 4, counts: counts({ delivered: 1, failed: 3 }) })).toBe("1 of 4 delivered, 3 not");
  });
});

describe("health is for running replays only", () => {
  const base = { ratePerSecond: 50, runningSince: new Date(0), lastSettledAt: new Date(1000), lastError: "HTTP 500", lastErrorAt: new Date(1000) };
  it("a finished replay with 20 consecutive failures is finished, not ok; a running one with them is failing", () => {
    const now = new Date(2000);
    expect(replayHealth({ ...base, status: "completed", consecutiveFailures: 20 }, now, 10_000).state).toBe("finished");
    expect(replayHealth({ ...base, status: "cancelled", consecutiveFailures: 0 }, now, 10_000).state).toBe("finished");
    expect(replayHealth({ ...base, status: "running", consecutiveFailures: 20 }, now, 10_000).state).toBe("failing");
  });
});

describe("evidence headers (lib/replay/evidence.ts)", () => {
  it("masks signatures to their first characters and credentials whole, keeps order, caps values", async () => {
    const { maskHeaders, MAX_VALUE } = await import("@/lib/replay/evidence");
    const masked = maskHeaders({
      "content-type": "application/json",
      "webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAA v1,BBBBBBBBBBBBBBBBBBBBB",
      Authorization: "Bearer secret-token",
      "x-long": "x".repeat(2000),
    });
    expect(masked[0]).toEqual(["content-type", "application/json"]);
    expect(masked[1]).toEqual(["webhook-signature", "v1,AAAAAA… (masked) v1,BBBBBB… (masked)"]);
    expect(masked[2]).toEqual(["Authorization", "(masked)"]);
    expect(masked[3][1]).toHaveLength(MAX_VALUE);
    expect(maskHeaders([["Set-Cookie", "session=abc"]])).toEqual([["Set-Cookie", "(masked)"]]);
  });
});
