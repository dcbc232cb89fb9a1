/**
 * The TTL advisor (issue 14 §3). Its rules, pure: the observed tail is covered (p99.9 and every late
 * gap), the design's floor and the margins the invariants require are kept, too little evidence gives no
 * recommendation and says how much is needed. Then GET /api/v1/sources/{name}/advice on the real
 * PostgreSQL: its exact shape, the evidence flowing from real claims, 404 and 400.
 */
import { describe, expect, it } from "vitest";
import { GET as adviceRoute } from "@/app/api/v1/sources/[name]/advice/route";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { addAges, emptyHistogram } from "@/lib/metrics/duplicate-ages";
import { adviceSchema } from "@/lib/retention/advice-schema";
import { advise, humanDuration, MIN_DUPLICATES, roundUpWindow, type AdvisorInput } from "@/lib/retention/advisor";
import { judgeLateDuplicates, NO_LATE_EVIDENCE, ttlEpochs, type LateGroup, type TtlEdit } from "@/lib/retention/evidence";
import { checkInvariants } from "@/lib/retention/invariants";
import { ttlFloorFor, ttlOfParts } from "@/lib/retention/presets";
import { prisma } from "@/lib/db/client";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { createSourceRequest } from "@/lib/sources/schema";
import { createSource, updateSource } from "@/lib/sources/sources";
import { sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";

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
  late: NO_LATE_EVIDENCE,
  ...o,
});

/** Late duplicates of the sender (and of replays) under one TTL, the current one, as advice.ts groups them. */
const lateOf = (sender: { count: number; maxGapSeconds: number } | null, replays?: { count: number; maxGapSeconds: number }, edits: TtlEdit[] = [], epoch = 0) => {
  const groups: LateGroup[] = [];
  if (sender) groups.push({ epoch, viaReplay: false, ...sender });
  if (replays) groups.push({ epoch, viaReplay: true, ...replays });
  return judgeLateDuplicates(groups, ttlEpochs(edits, 7 * D).epochs);
};

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
    const a = advise(input({ ages: traffic(5000), late: lateOf({ count: 2, maxGapSeconds: 8 * D + 3 * H }) }));
    const r = a.recommended!;
    expect(r.parts.retryWindowSeconds).toBeGreaterThanOrEqual(8 * D + 3 * H);
    expect(r.ttlSeconds).toBeGreaterThanOrEqual(ttlFloorFor(r.parts.retryWindowSeconds));
    expect(r.reasons[0]).toMatch(/^2 events were processed twice in the last 30 d under the current TTL of 7 d/);
    expect(r.reasons[0]).toMatch(/up to 8 d 3 h after the first claim/);
    expect(a.verdict).toEqual({ tone: "warn", badge: "Change recommended", text: expect.stringMatching(/^Recommended: TTL /), changes: true });
  });

  it("an operator's forced replays are not sender retries: shown apart, they push nothing (issue 23 §6)", () => {
    const parts = { retryWindowSeconds: 6 * H, queueLagSeconds: H, clockSkewSeconds: 5 * M, replaySeconds: H };
    // The duplicates alone: a retry window of 6 h covers them (the floor is what raises the TTL).
    const base = advise(input({ parts, ages: traffic(2000, [5 * H]) }));
    // Three late claims by a forced replay, 1 d 6 h after the first claims: the same advice.
    const withReplays = advise(input({ parts, ages: traffic(2000, [5 * H]), late: lateOf(null, { count: 3, maxGapSeconds: D + 6 * H }) }));
    expect(withReplays.recommended!.parts).toEqual(base.recommended!.parts);
    expect(withReplays.recommended!.reasons.join(" ")).toMatch(
      /3 events were processed again by an operator's forced replay \(up to 1 d 6 h after the first claim\): an operator's decision, not a sender's retry, so they are left out of the evidence\./,
    );
    expect(withReplays.recommended!.reasons.join(" ")).not.toMatch(/processed twice/);
    // Replays alone are no evidence either.
    const only = advise(input({ ages: traffic(10), late: lateOf(null, { count: 3, maxGapSeconds: D + 6 * H }) }));
    expect(only.recommended).toBeNull();
    expect(only.reason).toMatch(/^Too little evidence: 10 duplicates and no late duplicate from the sender/);
    expect(only.verdict.tone).toBe("neutral");
  });

  it("late duplicates under an earlier, shorter TTL are judged against it: once covered, no change, and badge and text agree", () => {
    // The advice was applied on 2026-11-20: TTL 8 h 5 min → 7 d. The late duplicates came under the old TTL.
    const edits = [{ at: new Date("2026-11-20T00:00:00Z"), beforeTtlSeconds: 8 * H + 5 * M, afterTtlSeconds: 7 * D }];
    const late = lateOf({ count: 3, maxGapSeconds: D + 4 * H }, undefined, edits, 0);
    const applied = { retryWindowSeconds: D + 4 * H, queueLagSeconds: H, clockSkewSeconds: 5 * M, replaySeconds: 5 * D + 18 * H + 55 * M };
    const a = advise(input({ parts: applied, ages: traffic(2000, [5 * H]), late }));
    expect(a.recommended!.parts).toEqual(applied);
    const text = a.recommended!.reasons.join(" ");
    expect(text).toMatch(/3 events were processed twice in the last 30 d under the earlier TTL of 8 h 5 min \(in force until 2026-11-20 00:00 UTC\)/);
    expect(text).not.toMatch(/under the current TTL/);
    expect(a.verdict).toEqual({
      tone: "ok",
      badge: "TTL fits the traffic",
      text: "The current TTL covers what arrived: no change needed (the 3 late duplicates came under an earlier, shorter TTL)",
      changes: false,
    });
    // The same late duplicates under the TTL in force now: a change is recommended.
    const now = advise(input({ parts: { ...applied, retryWindowSeconds: 6 * H }, ages: traffic(2000, [5 * H]), late: lateOf({ count: 3, maxGapSeconds: D + 4 * H }) }));
    expect(now.verdict.tone).toBe("warn");
    expect(now.recommended!.reasons[0]).toMatch(/under the current TTL/);
  });

  it("a late duplicate is evidence on its own: a recommendation with few duplicates", () => {
    const a = advise(input({ ages: traffic(10), late: lateOf({ count: 1, maxGapSeconds: 2 * D }), parts: { retryWindowSeconds: H, queueLagSeconds: H, clockSkewSeconds: 60, replaySeconds: 22 * H - 60 } }));
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
    const a = advise(input({ ages: traffic(1000), late: lateOf({ count: 1, maxGapSeconds: 60 * D }) }));
    expect(a.recommended).toBeNull();
    expect(a.reason).toMatch(/beyond the longest TTL Keyward allows \(90 d\)/);
    expect(a.verdict).toMatchObject({ tone: "warn", text: a.reason, changes: false });
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
    expect(Object.keys(r.body).sort()).toEqual(["current", "observed", "projection", "reason", "recommended", "source", "verdict", "window"]);
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
    expect(parsed.verdict).toEqual({ tone: "neutral", badge: "Not enough evidence yet", text: parsed.reason, changes: false });
  });

  it("judges late duplicates against the TTL history of the source's operator log, and keeps forced replays apart", async () => {
    const { key } = await makeApiKey(["read"]);
    const name = uniq("adv");
    const short = { retryWindowSeconds: 6 * H, queueLagSeconds: H, clockSkewSeconds: 5 * M, replaySeconds: H };
    await createSource(parseInput(createSourceRequest, { name, ...short }), cliPrincipal()); // TTL 8 h 5 min, logged
    const late = (eventId: string, gap: number, viaReplay: boolean) =>
      sql(
        `INSERT INTO late_duplicates (source, event_id, event_type, first_claim_at, late_claim_at, gap_seconds, key_state, via_replay)
         VALUES ($1, $2, 't', now() - make_interval(secs => $3 + 60), now() - interval '60 seconds', $3, 'pruned', $4)`,
        [name, eventId, gap, viaReplay],
      );
    await late(uniq("e"), D + 4 * H, false); // the sender's retry, 1 d 4 h later
    await late(uniq("e"), D + 6 * H, true); // an operator's forced replay, 1 d 6 h later
    const before = (await call(name, "", key)).body;
    expect(before.observed.lateEvidence).toMatchObject({ sender: 1, senderMaxGapSeconds: D + 4 * H, underCurrentTtl: 1, replays: 1, replaysMaxGapSeconds: D + 6 * H });
    expect(before.recommended.parts.retryWindowSeconds).toBe(D + 4 * H); // the sender's gap, not the replay's
    expect(before.verdict).toMatchObject({ tone: "warn", badge: "Change recommended", changes: true });

    // The advice applied: the late duplicates now belong to the earlier TTL, and the verdict is one: no change.
    await updateSource(name, before.recommended.parts, cliPrincipal());
    const after = (await call(name, "", key)).body;
    expect(after.observed.lateEvidence.underCurrentTtl).toBe(0);
    expect(after.observed.lateEvidence.byTtl).toEqual([
      { ttlSeconds: 8 * H + 5 * M, from: null, until: expect.any(String), current: false, count: 1, maxGapSeconds: D + 4 * H },
    ]);
    expect(after.verdict).toEqual({
      tone: "ok",
      badge: "TTL fits the traffic",
      text: "The current TTL covers what arrived: no change needed (the 1 late duplicate came under an earlier, shorter TTL)",
      changes: false,
    });
    expect(after.recommended.reasons.join(" ")).toMatch(/under the earlier TTL of 8 h 5 min/);
  });

  it("404 for an unknown source, 422 naming window for a bad one, 422 for an unknown parameter, 401 without a key", async () => {
    const { key } = await makeApiKey(["read"]);
    const name = uniq("adv");
    await prisma().source.create({ data: { name, ...stripe, ttlSeconds: ttlOfParts(stripe) } });
    const missing = await call("no-such-source-adv", "", key);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("source_not_found");
    for (const w of ["30x", "0d", "91d", "", "30"]) {
      const bad = await call(name, `?window=${w}`, key);
      expect(bad.status, w).toBe(422);
      expect(bad.body.error.code).toBe("invalid_request");
      expect(bad.body.error.message).toMatch(/^invalid request: window: /);
      expect(bad.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(["window"]);
    }
    expect((await call(name, "?window=90d", key)).status).toBe(200);
    expect((await call(name, "?windw=30d", key)).status).toBe(422);
    expect((await call(name, "")).status).toBe(401);
  });
});
