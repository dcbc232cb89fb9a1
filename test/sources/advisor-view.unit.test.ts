/** The source page's pure side (components/sources/advisor-view.ts) and the Overview's backlog "now". */
import { describe, expect, it } from "vitest";
import {
  agePosition,
  histogramBars,
  lateDayPoints,
  recommendedForm,
  summarizeAdvice,
} from "@/components/sources/advisor-view";
import { backlogNow } from "@/components/overview/figures";
import { AGE_BUCKETS } from "@/lib/metrics/duplicate-ages";
import type { AdviceResponse } from "@/lib/retention/advice-schema";
import type { Overview } from "@/lib/overview/schema";

const histogram = [...AGE_BUCKETS.map((le) => ({ leSeconds: le as number, count: 0 })), { leSeconds: null, count: 0 }];
const D = 86400;
const parts = { retryWindowSeconds: 3 * D, queueLagSeconds: D, clockSkewSeconds: 300, replaySeconds: 2 * D + 23 * 3600 + 3300 };

const advice = (o: Partial<AdviceResponse>): AdviceResponse => ({
  source: "stripe",
  window: "30d",
  observed: {
    duplicates: 0,
    ageP50Seconds: null,
    ageP99Seconds: null,
    ageP999Seconds: null,
    maxAgeSeconds: null,
    histogram,
    lateDuplicates: 0,
    lateDuplicateExamples: [],
    lateEvidence: { sender: 0, senderMaxGapSeconds: null, underCurrentTtl: 0, replays: 0, replaysMaxGapSeconds: null, byTtl: [] },
  },
  current: { ttlSeconds: 7 * D, parts },
  recommended: null,
  reason: "Too little evidence: …",
  verdict: { tone: "neutral", badge: "Not enough evidence yet", text: "Too little evidence: …", changes: false },
  projection: { currentBytes: 1000, recommendedBytes: null },
  ...o,
});

describe("the histogram's axis", () => {
  it("labels each bar by its upper edge, the last as older than 90 d", () => {
    const bars = histogramBars(histogram);
    expect(bars).toHaveLength(15);
    expect(bars[0]).toMatchObject({ x: 0, label: "≤ 1 s", range: "within 1 s" });
    expect(bars[8]).toMatchObject({ label: "≤ 3 d", range: "2 d to 3 d" });
    expect(bars[14]).toMatchObject({ label: "> 90 d", range: "older than 90 d" });
  });

  it("places a duration between the edges, on the bars' log scale: an edge is its bar's right border", () => {
    expect(agePosition(7 * D, histogram)).toBeCloseTo(10.5); // 7 d is the ≤ 7 d bucket's upper edge
    expect(agePosition(3 * D, histogram)).toBeCloseTo(8.5);
    const fourDays = agePosition(4 * D, histogram); // inside (3 d, 5 d]
    expect(fourDays).toBeGreaterThan(8.5);
    expect(fourDays).toBeLessThan(9.5);
    expect(fourDays).toBeCloseTo(8.5 + Math.log(4 / 3) / Math.log(5 / 3));
    expect(agePosition(0.5, histogram)).toBeCloseTo(0);
    expect(agePosition(200 * D, histogram)).toBe(14);
  });
});

describe("summarizeAdvice", () => {
  it("without a recommendation: the reason, no apply", () => {
    const s = summarizeAdvice(advice({}));
    expect(s).toMatchObject({ observed: "No duplicate in the last 30d", late: null, verdict: "Too little evidence: …", changes: false, tone: "neutral" });
    expect(s.current).toBe("TTL 7 d: 3 d + 1 d + 5 min + 2 d 23 h 55 min");
  });

  it("badge, tone and text are the server's one verdict; the sender's late duplicates by TTL, forced replays apart", () => {
    const evidence = { sender: 2, senderMaxGapSeconds: 3 * D, underCurrentTtl: 2, replays: 3, replaysMaxGapSeconds: D, byTtl: [] };
    const observed = { ...advice({}).observed, duplicates: 1500, ageP999Seconds: 3 * D + 7200, maxAgeSeconds: 3 * D + 7200, lateDuplicates: 5, lateEvidence: evidence };
    const rec = { ttlSeconds: 14 * D, parts: { ...parts, retryWindowSeconds: 3 * D + 6 * 3600, replaySeconds: 9 * D + 17 * 3600 + 3300 }, reasons: ["…"] };
    const verdict = { tone: "warn" as const, badge: "Change recommended", text: "Recommended: TTL 14 d (3 d 6 h + 1 d + 5 min + 9 d 17 h 55 min)", changes: true };
    const s = summarizeAdvice(advice({ observed, recommended: rec, reason: null, verdict }));
    expect(s).toMatchObject({ changes: true, tone: "warn", badge: "Change recommended", verdict: verdict.text });
    expect(s.late).toBe("2 events were processed twice under the current TTL: the key had expired when a later delivery came");
    expect(s.replays).toBe("3 more were processed again by an operator's forced replay: not a sender's retry, left out of the evidence");
    // After the change: the same late duplicates belong to the earlier TTL; the verdict is ok, and so is the badge.
    const ok = { tone: "ok" as const, badge: "TTL fits the traffic", text: "The current TTL covers what arrived: no change needed", changes: false };
    const same = summarizeAdvice(
      advice({ observed: { ...observed, lateEvidence: { ...evidence, underCurrentTtl: 0, replays: 0 } }, recommended: { ttlSeconds: 7 * D, parts, reasons: [] }, reason: null, verdict: ok }),
    );
    expect(same).toMatchObject({ changes: false, tone: "ok", badge: ok.badge, verdict: ok.text, replays: null });
    expect(same.late).toBe("2 events were processed twice under an earlier, shorter TTL: the key had expired when a later delivery came");
  });

  it("apply fills the ordinary edit form with the recommended parts, as custom", () => {
    const form = recommendedForm({ name: "stripe", preset: "stripe", deadLetterRetentionSeconds: 2 * D, ...parts }, { ...parts, retryWindowSeconds: 3 * D + 6 * 3600 });
    expect(form).toMatchObject({ name: "stripe", preset: "", retryWindow: "3d6h", queueLag: "1d", clockSkew: "5m", replay: "2d23h55m", deadLetterRetention: "2d" });
  });

  it("late duplicates per day become chart points, replays apart", () => {
    expect(lateDayPoints([{ day: "2026-12-04", count: 3, viaReplay: 1 }])).toEqual([{ t: Date.parse("2026-12-04T00:00:00Z"), late: 2, viaReplay: 1, total: 3 }]);
  });
});

describe("the backlog chart's now", () => {
  const overview = (expiredTotal: number | null, perSource: number | null): Overview =>
    ({
      asOf: "2026-12-05T12:00:00.000Z",
      lastHourSince: "2026-12-05T11:01:00.000Z",
      countLimit: 100_000,
      latestSample: null,
      totals: { sources: 1, keys: { alive: 5, inFlight: 0, leaseLapsed: 0, expired: expiredTotal }, lastHour: { claimed: 0, duplicate: 0, inFlight: 0, payloadMismatch: 0 } },
      sources: [{ source: "stripe", createdAt: "2026-12-01T00:00:00.000Z", ttl: { ...parts, ttlSeconds: 7 * D }, keys: { alive: 5, inFlight: 0, leaseLapsed: 0, expired: perSource }, lastHour: { claimed: 0, duplicate: 0, inFlight: 0, payloadMismatch: 0 } }],
    }) as Overview;

  it("is the Expired, not pruned card's figure, or the filtered source's live count", () => {
    expect(backlogNow(overview(1234, 1234), null)).toBe("1,234");
    expect(backlogNow(overview(1234, 17), "stripe")).toBe("17");
    expect(backlogNow(overview(null, null), "stripe")).toBeUndefined();
    expect(backlogNow(overview(null, null), null)).toBe(">100,000");
  });
});
