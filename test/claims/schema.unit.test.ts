/** The claim API's zod schemas: every limit, at and just past its edge. */
import { describe, expect, it } from "vitest";
import {
  MAX_BATCH,
  batchClaimRequest,
  claimKeyParams,
  claimRequest,
  completeRequest,
  releaseRequest,
} from "@/lib/claims/schema";
import type { Json } from "@/test/setup/json";

const base = { source: "stripe", eventId: "evt_1", eventType: "charge.succeeded" };
const ok = (input: unknown) => claimRequest.safeParse(input).success;
const fieldsOf = (input: unknown, schema: { safeParse: (i: unknown) => Json } = claimRequest): string[] => {
  const r = schema.safeParse(input);
  return r.success ? [] : r.error.issues.map((i: { path: PropertyKey[] }) => i.path.join("."));
};

describe("claimRequest", () => {
  it("accepts a minimal and a full claim", () => {
    expect(ok(base)).toBe(true);
    expect(ok({ ...base, payloadHash: "0".repeat(64), leaseSeconds: 30 })).toBe(true);
  });

  it("source: ^[a-z0-9][a-z0-9_-]{0,63}$", () => {
    for (const good of ["a", "0", "stripe", "my_src-2", "a" + "b".repeat(63)]) expect(ok({ ...base, source: good })).toBe(true);
    for (const bad of ["", "Stripe", "-stripe", "_x", "has space", "a.b", "a" + "b".repeat(64), "ünï"]) {
      expect(fieldsOf({ ...base, source: bad })).toEqual(["source"]);
    }
  });

  it("eventId: 1 to 255 characters, no control characters", () => {
    expect(ok({ ...base, eventId: "x".repeat(255) })).toBe(true);
    expect(ok({ ...base, eventId: "ünïcødé 🎉 / spaces" })).toBe(true);
    expect(fieldsOf({ ...base, eventId: "" })).toEqual(["eventId"]);
    expect(fieldsOf({ ...base, eventId: "x".repeat(256) })).toEqual(["eventId"]);
    for (const c of ["\u0000", "\t", "\n", "\u001f", "\u007f", "\u0085", "\u009f"]) {
      expect(fieldsOf({ ...base, eventId: `a${c}b` })).toEqual(["eventId"]);
    }
    expect(fieldsOf({ ...base, eventId: 42 })).toEqual(["eventId"]);
  });

  it("eventType: 1 to 128 characters", () => {
    expect(ok({ ...base, eventType: "t".repeat(128) })).toBe(true);
    expect(fieldsOf({ ...base, eventType: "t".repeat(129) })).toEqual(["eventType"]);
    expect(fieldsOf({ ...base, eventType: "" })).toEqual(["eventType"]);
  });

  it("payloadHash: exactly 64 hex characters, stored lowercase", () => {
    const parsed = claimRequest.parse({ ...base, payloadHash: "ABCDEF" + "0".repeat(58) });
    expect(parsed.payloadHash).toBe("abcdef" + "0".repeat(58));
    for (const bad of ["0".repeat(63), "0".repeat(65), "g".repeat(64), "", " " + "0".repeat(63)]) {
      expect(fieldsOf({ ...base, payloadHash: bad })).toEqual(["payloadHash"]);
    }
  });

  it("leaseSeconds: a whole number from 1 to 86400", () => {
    expect(ok({ ...base, leaseSeconds: 1 })).toBe(true);
    expect(ok({ ...base, leaseSeconds: 86400 })).toBe(true);
    for (const bad of [0, -1, 86401, 1.5, "30", null]) expect(fieldsOf({ ...base, leaseSeconds: bad })).toEqual(["leaseSeconds"]);
  });

  it("rejects unknown fields and missing required ones", () => {
    const r = claimRequest.safeParse({ ...base, extra: 1 });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error!.issues)).toMatch(/extra/);
    expect(fieldsOf({ source: "s" }).sort()).toEqual(["eventId", "eventType"]);
  });
});

describe("batchClaimRequest", () => {
  const ev = (i: number) => ({ eventId: `e${i}`, eventType: "t" });
  it(`holds 1 to ${MAX_BATCH} events`, () => {
    expect(MAX_BATCH).toBe(1000);
    expect(batchClaimRequest.safeParse({ source: "s", events: [ev(0)] }).success).toBe(true);
    expect(batchClaimRequest.safeParse({ source: "s", events: Array.from({ length: 1000 }, (_, i) => ev(i)) }).success).toBe(true);
    expect(fieldsOf({ source: "s", events: Array.from({ length: 1001 }, (_, i) => ev(i)) }, batchClaimRequest)).toEqual(["events"]);
    expect(fieldsOf({ source: "s", events: [] }, batchClaimRequest)).toEqual(["events"]);
  });

  it("events carry no per-event lease or source, and the batch no unknown field", () => {
    expect(batchClaimRequest.safeParse({ source: "s", events: [{ ...ev(0), leaseSeconds: 5 }] }).success).toBe(false);
    expect(batchClaimRequest.safeParse({ source: "s", events: [{ ...ev(0), source: "s" }] }).success).toBe(false);
    expect(batchClaimRequest.safeParse({ source: "s", events: [ev(0)], extra: true }).success).toBe(false);
    expect(batchClaimRequest.safeParse({ source: "s", events: [ev(0)], leaseSeconds: 86401 }).success).toBe(false);
  });
});

describe("settle and key schemas", () => {
  const token = "5f0c6f43-4a4e-4ad1-9c39-2d0f3c2a7b1e";
  it("complete needs a UUID claimToken", () => {
    expect(completeRequest.safeParse({ source: "s", eventId: "e", claimToken: token }).success).toBe(true);
    expect(fieldsOf({ source: "s", eventId: "e", claimToken: "nope" }, completeRequest)).toEqual(["claimToken"]);
    expect(fieldsOf({ source: "s", eventId: "e" }, completeRequest)).toEqual(["claimToken"]);
  });

  it("release takes an optional claimToken", () => {
    expect(releaseRequest.safeParse({ source: "s", eventId: "e" }).success).toBe(true);
    expect(releaseRequest.safeParse({ source: "s", eventId: "e", claimToken: token }).success).toBe(true);
    expect(fieldsOf({ source: "s", eventId: "e", claimToken: "x" }, releaseRequest)).toEqual(["claimToken"]);
  });

  it("key params validate source and eventId like a claim", () => {
    expect(claimKeyParams.safeParse({ source: "s", eventId: "e" }).success).toBe(true);
    expect(fieldsOf({ source: "S", eventId: "" }, claimKeyParams).sort()).toEqual(["eventId", "source"]);
  });
});
