/** TTL presets and invariant checks: pure rules, no database. */
import { describe, expect, it } from "vitest";
import { findPreset, PRESETS, ttlFloorFor, ttlOfParts } from "@/lib/retention/presets";
import { checkInvariants, type RetentionFacts } from "@/lib/retention/invariants";
import { MAX_TTL_SECONDS, createSourceRequest, applySourceUpdate } from "@/lib/sources/schema";

const d = 86400;
const facts = (over: Partial<RetentionFacts> = {}): RetentionFacts => {
  const base = { retryWindowSeconds: 3 * d, queueLagSeconds: d, clockSkewSeconds: 300, replaySeconds: 3 * d - 300 };
  const merged = { ...base, deadLetterRetentionSeconds: null, auditRetentionSeconds: 400 * d, ...over };
  return { ...merged, ttlSeconds: over.ttlSeconds ?? ttlOfParts(merged) };
};
const byId = (inv: ReturnType<typeof checkInvariants>, id: string) => inv.find((i) => i.id === id);

describe("presets", () => {
  it("give the design's TTLs: internal 24 h, SaaS 3 d, Stripe-class 7 d, incident replayers 14 d", () => {
    const ttl = (n: string) => ttlOfParts(findPreset(n)!.parts);
    expect(ttl("internal")).toBe(1 * d);
    expect(ttl("saas")).toBe(3 * d);
    expect(ttl("payments")).toBe(7 * d);
    expect(ttl("incident-replay")).toBe(14 * d);
    expect(ttl("stripe")).toBe(7 * d);
    expect(findPreset("stripe")!.parts.retryWindowSeconds).toBe(3 * d);
    expect(ttl("shopify")).toBe(7 * d);
    expect(ttl("github")).toBe(4 * d);
    // Svix's schedule ends ~27.6 h after the first attempt: past the 24 h class, so the 7-day floor.
    expect(findPreset("svix")!.parts.retryWindowSeconds).toBeGreaterThanOrEqual(27.6 * 3600);
    expect(ttl("svix")).toBe(7 * d);
  });

  it("every preset is finite, within 90 days, has every margin, cites its source, and passes its own checks", () => {
    expect(new Set(PRESETS.map((p) => p.name)).size).toBe(PRESETS.length);
    for (const p of PRESETS) {
      const ttl = ttlOfParts(p.parts);
      expect(ttl, p.name).toBeLessThanOrEqual(MAX_TTL_SECONDS);
      expect(p.source.length, p.name).toBeGreaterThan(20);
      const failing = checkInvariants(facts({ ...p.parts, ttlSeconds: ttl })).filter((i) => !i.ok);
      expect(failing, p.name).toEqual([]);
    }
  });

  it("floors follow the design's table", () => {
    expect(ttlFloorFor(300)).toBe(d);
    expect(ttlFloorFor(d)).toBe(3 * d);
    expect(ttlFloorFor(d + 1)).toBe(7 * d);
    expect(ttlFloorFor(3 * d)).toBe(7 * d);
    expect(ttlFloorFor(7 * d)).toBe(14 * d);
    expect(ttlFloorFor(10 * d)).toBe(20 * d);
  });
});

describe("createSourceRequest with presets", () => {
  it("fills the parts from a preset, lets given parts override it, and drops the preset name when they differ", () => {
    const a = createSourceRequest.parse({ name: "s", preset: "stripe" });
    expect(a).toMatchObject({ preset: "stripe", retryWindowSeconds: 3 * d, replaySeconds: findPreset("stripe")!.parts.replaySeconds });
    const b = createSourceRequest.parse({ name: "s", preset: "stripe", replaySeconds: 10 * d });
    expect(b).toMatchObject({ preset: null, retryWindowSeconds: 3 * d, replaySeconds: 10 * d });
  });

  it("names each missing part when there is no preset, and rejects an unknown preset", () => {
    const r = createSourceRequest.safeParse({ name: "s", retryWindowSeconds: 60 });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join(".")).sort()).toEqual(["clockSkewSeconds", "queueLagSeconds", "replaySeconds"]);
    const u = createSourceRequest.safeParse({ name: "s", preset: "nope" });
    expect(u.success).toBe(false);
    expect(u.error!.issues[0].message).toMatch(/stripe/);
  });

  it("an update keeps the preset only while the parts still match it", () => {
    const cur = { ...findPreset("stripe")!.parts, preset: "stripe" };
    expect(applySourceUpdate(cur, { deadLetterRetentionSeconds: 60 }).preset).toBe("stripe");
    expect(applySourceUpdate(cur, { queueLagSeconds: 2 * d })).toMatchObject({ preset: null, queueLagSeconds: 2 * d });
    expect(applySourceUpdate(cur, { preset: "github" })).toMatchObject({ preset: "github", ...findPreset("github")!.parts });
  });
});

describe("invariant checks", () => {
  it("warn when the TTL is below the design's floor for the retry window", () => {
    const inv = checkInvariants(facts({ retryWindowSeconds: 3 * d, queueLagSeconds: 60, clockSkewSeconds: 60, replaySeconds: 60 }));
    expect(byId(inv, "ttl_floor")).toMatchObject({ ok: false });
    expect(byId(inv, "ttl_floor")!.message).toMatch(/below the floor of 7d/);
  });

  it("warn when a margin is zero", () => {
    const inv = checkInvariants(facts({ queueLagSeconds: 0, replaySeconds: 0, retryWindowSeconds: 7 * d }));
    expect(byId(inv, "margins")).toMatchObject({ ok: false });
    expect(byId(inv, "margins")!.message).toMatch(/queue lag, replay margins are zero/);
  });

  it("warn when the audit history is kept less long than the keys", () => {
    expect(byId(checkInvariants(facts({ auditRetentionSeconds: 5 * d })), "audit_outlives_keys")!.ok).toBe(false);
    expect(byId(checkInvariants(facts({ auditRetentionSeconds: 7 * d })), "audit_outlives_keys")!.ok).toBe(true);
  });

  it("warn when dead letters can outlive their keys: retention > clock skew + replay margins", () => {
    const f = facts(); // skew 300 s + replay 3 d − 300 s = exactly 3 d of room
    expect(byId(checkInvariants({ ...f, deadLetterRetentionSeconds: 3 * d }), "dead_letters_within_keys")!.ok).toBe(true);
    const bad = byId(checkInvariants({ ...f, deadLetterRetentionSeconds: 3 * d + 1 }), "dead_letters_within_keys")!;
    expect(bad.ok).toBe(false);
    expect(bad.message).toMatch(/processes it twice/);
    expect(byId(checkInvariants(f), "dead_letters_within_keys")).toBeUndefined();
  });
});
