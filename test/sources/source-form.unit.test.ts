/** components/sources/describe.ts and source-form.ts: the Sources screen's display strings and form → request body. Pure; no database. */
import { describe, expect, it } from "vitest";
import {
  applyPreset,
  createBody,
  emptyForm,
  fieldErrorsFromServer,
  formFromSource,
  formParts,
  matchesPreset,
  safeDeadLetterRetention,
  updateBody,
  type SourceFormState,
} from "@/components/sources/source-form";
import { describeProjection, sourcesSummary, summarizeInvariants, ttlEquation } from "@/components/sources/describe";
import { signingGrace } from "@/components/sources/replay-destination";
import { findPreset, PRESETS } from "@/lib/retention/presets";

const d = 86400;
const stripe = findPreset("stripe")!;
const stripeSource = { name: "billing", preset: "stripe", deadLetterRetentionSeconds: null, ...stripe.parts };

const form = (over: Partial<SourceFormState>): SourceFormState => ({ ...applyPreset({ ...emptyForm(), name: "billing" }, stripe), ...over });

describe("ttlEquation", () => {
  it("shows the four parts and the TTL they add up to", () => {
    expect(ttlEquation(stripe.parts)).toBe("3d + 1d + 5m + 2d23h55m = 7d");
    expect(ttlEquation({ retryWindowSeconds: 90, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0 })).toBe(
      "1m30s + 0s + 0s + 0s = 1m30s",
    );
  });
});

describe("summarizeInvariants / sourcesSummary", () => {
  const ok = { id: "ttl_floor", ok: true, message: "fine" };
  const bad = { id: "dead_letters_within_keys", ok: false, message: "too long" };
  it("counts the failing checks", () => {
    expect(summarizeInvariants([ok, ok, ok])).toEqual({ failing: [], label: "All 3 checks pass" });
    expect(summarizeInvariants([ok, bad])).toEqual({ failing: [bad], label: "1 warning" });
    expect(summarizeInvariants([bad, bad]).label).toBe("2 warnings");
  });
  it("flags sources with any failing check", () => {
    expect(sourcesSummary([{ invariants: [ok] }, { invariants: [ok] }])).toBe("2 sources, all checks pass");
    expect(sourcesSummary([{ invariants: [ok] }, { invariants: [ok, bad] }])).toBe("2 sources, 1 with warnings");
  });
});

describe("describeProjection", () => {
  it("says claim rate × TTL × bytes per key, and whether bytes per key were measured", () => {
    const assumed = describeProjection({ claimRate: 1, keys: 7 * d, bytesPerKey: 250, bytesPerKeyMeasured: false, bytes: 7 * d * 250 }, 7 * d);
    expect(assumed).toEqual({
      result: "≈ 604,800 keys, 144 MiB",
      formula: "1.0/s × 7d × 250 B/key",
      basis: expect.stringMatching(/^bytes per key assumed/),
    });
    const measured = describeProjection({ claimRate: 10 / 3600, keys: 1680, bytesPerKey: 180, bytesPerKeyMeasured: true, bytes: 302400 }, 7 * d);
    expect(measured.result).toBe("≈ 1,680 keys, 295 KiB");
    expect(measured.formula).toBe("0.0028/s (10/h) × 7d × 180 B/key");
    expect(measured.basis).toMatch(/measured/);
    expect(describeProjection({ claimRate: 0, keys: 1, bytesPerKey: 250, bytesPerKeyMeasured: false, bytes: 250 }, d).result).toBe(
      "≈ 1 key, 250 B",
    );
  });
});

describe("the form's state", () => {
  it("is filled by a preset, and prefilled from a source for editing", () => {
    const f = applyPreset(emptyForm(), stripe);
    expect(f).toMatchObject({ preset: "stripe", retryWindow: "3d", queueLag: "1d", clockSkew: "5m", replay: "2d23h55m" });
    expect(applyPreset(f, undefined)).toMatchObject({ preset: "", retryWindow: "3d" });
    expect(formFromSource({ ...stripeSource, deadLetterRetentionSeconds: 30 * d })).toEqual({
      name: "billing",
      preset: "stripe",
      retryWindow: "3d",
      queueLag: "1d",
      clockSkew: "5m",
      replay: "2d23h55m",
      deadLetterRetention: "30d",
    });
  });
  it("knows when the typed parts still match the preset, and the TTL they give", () => {
    expect(matchesPreset(form({}), stripe)).toBe(true);
    expect(matchesPreset(form({ replay: "3d" }), stripe)).toBe(false);
    expect(formParts(form({ replay: "1d12h" }))).toMatchObject({ replaySeconds: 1.5 * d });
    expect(formParts(form({ replay: "soon" }))).toBeNull();
    expect(safeDeadLetterRetention(stripe.parts)).toBe(3 * d);
  });
  it("every preset reads back as typed durations that parse to its parts", () => {
    for (const p of PRESETS) expect(matchesPreset(applyPreset(emptyForm(), p), p)).toBe(true);
  });
});

describe("createBody", () => {
  it("sends the name, the preset, all four parts in seconds, and a dead-letter retention when given", () => {
    expect(createBody(form({ name: " billing " }))).toEqual({
      ok: true,
      body: { name: "billing", preset: "stripe", ...stripe.parts },
    });
    expect(createBody(form({ preset: "", deadLetterRetention: "2d" }))).toEqual({
      ok: true,
      body: { name: "billing", ...stripe.parts, deadLetterRetentionSeconds: 2 * d },
    });
  });
  it("refuses what the server would, each refusal on its field", () => {
    const r = createBody({
      name: "Billing!",
      preset: "",
      retryWindow: "0s",
      queueLag: "",
      clockSkew: "5 minutes",
      replay: "1d",
      deadLetterRetention: "400d",
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors.name).toMatch(/lowercase letters/);
    expect(r.errors.retryWindow).toMatch(/at least 1s/);
    expect(r.errors.queueLag).toMatch(/Queue lag is required/);
    expect(r.errors.clockSkew).toMatch(/Clock skew: "5 minutes" is not a duration/);
    expect(r.errors.deadLetterRetention).toMatch(/at most 365d/);
    expect(r.errors.replay).toBeUndefined();
  });
  it("refuses a TTL over 90 days, and an empty name", () => {
    const r = createBody(form({ name: "", retryWindow: "60d", replay: "30d" }));
    expect(r).toEqual({ ok: false, errors: { name: "Name is required", ttl: expect.stringMatching(/TTL \(91d5m\) must be at most 90d/) } });
  });
});

describe("updateBody", () => {
  it("sends the whole desired state, null clearing the dead-letter retention", () => {
    const state = formFromSource({ ...stripeSource, deadLetterRetentionSeconds: 2 * d });
    expect(updateBody({ ...state, deadLetterRetention: "30d" }, { ...stripeSource, deadLetterRetentionSeconds: 2 * d })).toEqual({
      ok: true,
      body: { preset: "stripe", ...stripe.parts, deadLetterRetentionSeconds: 30 * d },
    });
    expect(updateBody({ ...state, deadLetterRetention: " " }, { ...stripeSource, deadLetterRetentionSeconds: 2 * d })).toEqual({
      ok: true,
      body: { preset: "stripe", ...stripe.parts, deadLetterRetentionSeconds: null },
    });
  });
  it("refuses a change that changes nothing", () => {
    expect(updateBody(formFromSource(stripeSource), stripeSource)).toEqual({ ok: false, errors: { form: expect.stringMatching(/Nothing changed/) } });
  });
});

describe("fieldErrorsFromServer", () => {
  it("puts the server's 422 fields next to the form's fields; the rest at the form", () => {
    expect(
      fieldErrorsFromServer({
        fields: [
          { field: "retryWindowSeconds", message: "must be at least 1 second" },
          { field: "ttlSeconds", message: "TTL must be at most 90 days" },
          { field: "(body)", message: "send at least one field" },
          { field: "deadLetterRetentionSeconds", message: "too long" },
        ],
      }),
    ).toEqual({
      retryWindow: "must be at least 1 second",
      ttl: "TTL must be at most 90 days",
      form: "(body): send at least one field",
      deadLetterRetention: "too long",
    });
    expect(fieldErrorsFromServer(undefined)).toEqual({});
    expect(fieldErrorsFromServer({ retryAfterSeconds: 3 })).toEqual({});
  });
});

describe("signingGrace", () => {
  it("null without a grace period; active until its end (exclusive), ended after", () => {
    const until = "2026-12-04T10:00:00.000Z";
    const t = Date.parse(until);
    expect(signingGrace(null, t)).toBeNull();
    expect(signingGrace(until, t - 1)).toEqual({ active: true, until });
    expect(signingGrace(until, t)).toEqual({ active: false, until });
    expect(signingGrace(until, t + 86_400_000)).toEqual({ active: false, until });
  });
});
