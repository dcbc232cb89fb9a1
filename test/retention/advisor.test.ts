/**
 * The TTL advisor (issue 14 §3). Its rules, pure: the observed tail is covered (p99.9 and every late
 * gap), the design's floor and the margins the invariants require are kept, too little evidence gives no
 * recommendation and says how much is needed. Then GET /api/v1/sources/{name}/advice on the real
 * PostgreSQL: its exact shape, the evidence flowing from real claims, 404 and 400.
 */
import { describe, expect, it } from "vitest";
import { GET as adviceRoute } from "../../app/api/v1/sources/[name]/advice/route";
import { claimEvent, claimEvents } from "../../lib/claims/claim";
import { flushClaimCounts } from "../../lib/metrics/claim-counts";
import { addAges, emptyHistogram } from "../../lib/metrics/duplicate-ages";
import { adviceSchema } from "../../lib/retention/advice-schema";
import { advise, humanDuration, MIN_DUPLICATES, roundUpWindow, type AdvisorInput } from "../../lib/retention/advisor";
import { checkInvariants } from "../../lib/retention/invariants";
import { ttlFloorFor, ttlOfParts } from "../../lib/retention/presets";
import { prisma } from "../../lib/db/client";
import { sql, uniq } from "../setup/db";
import { makeApiKey } from "../setup/http";

const M = 60;
const H = 3600;
const D = 86400;
const stripe = { retryWindowSeconds: 3 * D, queueLagSeconds: D, clockSkewSeconds: 5 * M, replaySeconds: 2 * D + 23 * H + 55 * M };

const input = (o: Partial<AdvisorInput> & { ages?: number[] }): AdvisorInput => ({
  parts: stripe,
  deadLetterRetentionSeconds: null,
  auditRetentionSeconds: 400 * D,
  windowSeconds: 30 * D,
  histogram: addAges(emptyHistogram(), o.ages ?? []),
  late: { count: 0, maxGapSeconds: null, viaReplay: 0 },
  ...o,
});

/** n duplicates mostly within minutes, with a tail. */
const traffic = (n: number, tail: number[] = []) => [...Array<number>(n - tail.length).fill(30), ...tail];

describe("the advisor's rules", () => {
  it("too little evidence: no recommendation, and the reason says how many more duplicates are needed", () => {
    const a = advise(input({ ages: traffic(120) }));
    expect(a.recommended).toBeNull();
    expect(a.reason).toMatch(/120 duplicates/);
    expect(a.reason).toMatch(/1,000 duplicates are needed/);
    expect(a.reason).toMatch(/880 more duplicates/);
    expect(a.observed.duplicates).toBe(120);
    expect(a.observed.ageP50Seconds).toBe(30); // the ≤ 1 min bucket, capped at the largest age
  });

  it("no duplicate at all: null percentiles, no recommendation", () => {
    const a = advise(input({}));
    expect(a.recommended).toBeNull();
    expect(a.observed).toEqual({ duplicates: 0, ageP50Seconds: null, ageP99Seconds: null, ageP999Seconds: null, maxAgeSeconds: null });
  });

  it("a tail beyond the retry window: the retry window grows to cover p99.9, margins kept, floor applied, explained", () => {
    const tail = Array<number>(3).fill(3 * D + 2 * H);
    const a = advise(input({ ages: traffic(MIN_DUPLICATES, tail) }));
    const r = a.recommended!;
    expect(r).not.toBeNull();
    // p99.9 of 1000 is the 999th: inside the ≤5 d bucket, capped at the largest age 3 d 2 h → rounded up to 3 d 6 h.
    expect(a.observed.ageP999Seconds).toBe(3 * D + 2 * H);
    expect(r.parts.retryWindowSeconds).toBe(3 * D + 6 * H);
    expect(r.parts.retryWindowSeconds).toBeGreaterThanOrEqual(a.observed.ageP999Seconds!);
    expect(r.parts.queueLagSeconds).toBe(stripe.queueLagSeconds);
    expect(r.parts.clockSkewSeconds).toBe(stripe.clockSkewSeconds);
    // 3 d 6 h is past the 3 d class: the design's floor is 14 d, reached through the replay margin.
    expect(r.ttlSeconds).toBe(ttlFloorFor(3 * D + 6 * H));
    expect(r.ttlSeconds).toBe(14 * D);
    expect(r.ttlSeconds).toBe(ttlOfParts(r.parts));
    expect(r.reasons.join(" ")).toMatch(/3 duplicates arrived more than 3 d after the first delivery \(the oldest 3 d 2 h\), beyond your 3 d retry window\./);
    expect(r.reasons.join(" ")).toMatch(/floor for a 3 d 6 h retry window is 14 d/);
    expect(checkInvariants({ ...r.parts, ttlSeconds: r.ttlSeconds, deadLetterRetentionSeconds: null, auditRetentionSeconds: 400 * D }).every((i) => i.ok)).toBe(true);
  });

  it("covers every late-duplicate gap even when the duplicates' p99.9 is short, and says the events were processed twice", () => {
    const a = advise(input({ ages: traffic(5000), late: { count: 2, maxGapSeconds: 8 * D + 3 * H, viaReplay: 1 } }));
    const r = a.recommended!;
    expect(r.parts.retryWindowSeconds).toBeGreaterThanOrEqual(8 * D + 3 * H);
    expect(r.ttlSeconds).toBeGreaterThanOrEqual(ttlFloorFor(r.parts.retryWindowSeconds));
    expect(r.reasons[0]).toMatch(/^2 events were processed twice in the last 30 d/);
    expect(r.reasons[0]).toMatch(/up to 8 d 3 h after the first claim/);
    expect(r.reasons[0]).toMatch(/replay/);
  });

  it("a late duplicate is evidence on its own: a recommendation with few duplicates", () => {
    const a = advise(input({ ages: traffic(10), late: { count: 1, maxGapSeconds: 2 * D, viaReplay: 0 }, parts: { retryWindowSeconds: H, queueLagSeconds: H, clockSkewSeconds: 60, replaySeconds: 22 * H - 60 } }));
    expect(a.recommended).not.toBeNull();
    expect(a.recommended!.parts.retryWindowSeconds).toBe(2 * D);
    expect(a.recommended!.ttlSeconds).toBe(7 * D); // a 2 d window is in the ≤3 d class: floor 7 d
  });

  it("never below the declared retry window or its floor: a short observed tail keeps the TTL as it is", () => {
    const a = advise(input({ ages: traffic(2000, [5 * H]) }));
    const r = a.recommended!;
    expect(r.parts).toEqual(stripe);
    expect(r.ttlSeconds).toBe(7 * D);
    expect(r.reasons.at(-1)).toMatch(/no change needed/);
  });

  it("raises a zero margin and a replay margin too short for the dead-letter retention, as the invariants require", () => {
    const parts = { retryWindowSeconds: D, queueLagSeconds: 0, clockSkewSeconds: 5 * M, replaySeconds: 2 * D };
    const a = advise(input({ parts, deadLetterRetentionSeconds: 5 * D, ages: traffic(1500) }));
    const r = a.recommended!;
    expect(r.parts.queueLagSeconds).toBeGreaterThan(0);
    expect(r.parts.clockSkewSeconds + r.parts.replaySeconds).toBeGreaterThanOrEqual(5 * D);
    expect(r.reasons.join(" ")).toMatch(/queue-lag margin is zero/);
    expect(r.reasons.join(" ")).toMatch(/Dead letters are kept 5 d/);
    const checks = checkInvariants({ ...r.parts, ttlSeconds: r.ttlSeconds, deadLetterRetentionSeconds: 5 * D, auditRetentionSeconds: 400 * D });
    expect(checks.filter((c) => !c.ok)).toEqual([]);
  });

  it("no recommendation past the longest TTL (90 d), saying why", () => {
    const a = advise(input({ ages: traffic(1000), late: { count: 1, maxGapSeconds: 60 * D, viaReplay: 0 } }));
    expect(a.recommended).toBeNull();
    expect(a.reason).toMatch(/beyond the longest TTL Keyward allows \(90 d\)/);
  });

  it("words and rounding", () => {
    expect(humanDuration(3 * D + 2 * H + 7)).toBe("3 d 2 h");
    expect(humanDuration(45 * M)).toBe("45 min");
    expect(humanDuration(12)).toBe("12 s");
    expect(roundUpWindow(61)).toBe(120);
    expect(roundUpWindow(H + 1)).toBe(2 * H);
    expect(roundUpWindow(3 * D + 2 * H)).toBe(3 * D + 6 * H);
  });
});

describe("GET /api/v1/sources/{name}/advice (real PostgreSQL)", () => {
  const call = async (name: string, qs = "", key?: string) => {
    const res = await adviceRoute(
      new Request(`http://localhost/api/v1/sources/${encodeURIComponent(name)}/advice${qs}`, { headers: key ? { authorization: `Bearer ${key}` } : {} }),
      { params: Promise.resolve({ name }) },
    );
    return { status: res.status, body: await res.json() };
  };

  it("answers exactly the documented shape, from real claims: histogram, percentiles, current and projection", async () => {
    const { key } = await makeApiKey(["read"]);
    const name = uniq("adv");
    await prisma().source.create({ data: { name, ...stripe, ttlSeconds: ttlOfParts(stripe) } });
    const ids = Array.from({ length: 5 }, () => uniq("e"));
    await claimEvents({ source: name, events: ids.map((eventId) => ({ eventId, eventType: "t" })) });
    await sql("UPDATE dedup_keys SET received_at = received_at - interval '3 days 2 hours' WHERE source = $1 AND event_id = $2", [name, ids[0]]);
    for (const eventId of ids) await claimEvent({ source: name, eventId, eventType: "t" });
    await flushClaimCounts();

    const r = await call(name, "?window=7d", key);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(["current", "observed", "projection", "reason", "recommended", "source", "window"]);
    const parsed = adviceSchema.strict().parse(r.body);
    expect(parsed.window).toBe("7d");
    expect(parsed.observed.duplicates).toBe(5);
    expect(parsed.observed.histogram).toHaveLength(15);
    // the four fresh ones within seconds (≤ 1 s unless the machine is very slow), the aged one ≤ 5 d
    expect(parsed.observed.histogram.slice(0, 3).reduce((n, b) => n + b.count, 0)).toBe(4);
    expect(parsed.observed.histogram[0].leSeconds).toBe(1);
    expect(parsed.observed.histogram[9]).toEqual({ leSeconds: 5 * D, count: 1 });
    expect(parsed.observed.histogram[14]).toEqual({ leSeconds: null, count: 0 });
    expect(parsed.observed.maxAgeSeconds).toBeGreaterThanOrEqual(3 * D + 2 * H);
    expect(parsed.current).toEqual({ ttlSeconds: 7 * D, parts: stripe });
    expect(parsed.recommended).toBeNull();
    expect(parsed.reason).toMatch(/995 more duplicates/);
    expect(parsed.projection).toEqual({ currentBytes: expect.any(Number), recommendedBytes: null });
    expect(parsed.projection.currentBytes).toBeGreaterThan(0); // 5 claims in the last hour × 7 d × bytes per key
  });

  it("404 for an unknown source, 400 naming window for a bad one, 422 for an unknown parameter, 401 without a key", async () => {
    const { key } = await makeApiKey(["read"]);
    const name = uniq("adv");
    await prisma().source.create({ data: { name, ...stripe, ttlSeconds: ttlOfParts(stripe) } });
    const missing = await call("no-such-source-adv", "", key);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("source_not_found");
    for (const w of ["30x", "0d", "91d", "", "30"]) {
      const bad = await call(name, `?window=${w}`, key);
      expect(bad.status, w).toBe(400);
      expect(bad.body.error.code).toBe("invalid_window");
      expect(bad.body.error.message).toMatch(/^window: /);
    }
    expect((await call(name, "?window=90d", key)).status).toBe(200);
    expect((await call(name, "?windw=30d", key)).status).toBe(422);
    expect((await call(name, "")).status).toBe(401);
  });
});
