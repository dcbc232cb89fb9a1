/** Pure rules of lib/claims/classify.ts: batch de-duplication and turning statement rows into answers. */
import { describe, expect, it } from "vitest";
import { classifyClaims, dedupeBatch, hashesConflict, type ClaimRow } from "@/lib/claims/classify";

const H1 = "1".repeat(64);
const H2 = "2".repeat(64);

const T0 = new Date("2026-12-02T10:00:00.000Z");
const T1 = new Date("2026-12-09T10:00:00.000Z");

function row(eventId: string, over: Partial<ClaimRow> = {}): ClaimRow {
  return {
    event_id: eventId,
    status: "done",
    claim_kind: "claimed",
    claimed_now: false,
    is_repeat: false,
    claim_token: null,
    payload_hash: null,
    lease_expires_at: null,
    received_at: T0,
    expires_at: T1,
    duplicate_count: 0,
    attempt_id: null,
    db_now: T0,
    result_status: null,
    result_headers: null,
    result_body: null,
    ...over,
  };
}

describe("dedupeBatch", () => {
  it("keeps the first occurrence of each id in input order and counts its later repeats", () => {
    const out = dedupeBatch([
      { eventId: "b", eventType: "t1" },
      { eventId: "a", eventType: "t2" },
      { eventId: "b", eventType: "t3" },
      { eventId: "c", eventType: "t4" },
      { eventId: "b", eventType: "t5" },
    ]);
    expect(out).toEqual([
      { first: { eventId: "b", eventType: "t1" }, repeats: 2 },
      { first: { eventId: "a", eventType: "t2" }, repeats: 0 },
      { first: { eventId: "c", eventType: "t4" }, repeats: 0 },
    ]);
  });

  it("does not count a repeat whose payload hash conflicts with the first occurrence", () => {
    const out = dedupeBatch([
      { eventId: "x", eventType: "t", payloadHash: H1 },
      { eventId: "x", eventType: "t", payloadHash: H2 },
      { eventId: "x", eventType: "t", payloadHash: H1 },
      { eventId: "x", eventType: "t" },
    ]);
    expect(out).toHaveLength(1);
    expect(out[0].repeats).toBe(2);
    expect(out[0].first.payloadHash).toBe(H1);
  });

  it("is empty for an empty batch and distinguishes ids exactly (case matters)", () => {
    expect(dedupeBatch([])).toEqual([]);
    expect(dedupeBatch([{ eventId: "A", eventType: "t" }, { eventId: "a", eventType: "t" }])).toHaveLength(2);
  });
});

describe("hashesConflict", () => {
  it("conflicts only when both hashes are present and differ", () => {
    expect(hashesConflict(H1, H2)).toBe(true);
    expect(hashesConflict(H1, H1)).toBe(false);
    expect(hashesConflict(null, H1)).toBe(false);
    expect(hashesConflict(H1, undefined)).toBe(false);
    expect(hashesConflict(undefined, null)).toBe(false);
  });
});

describe("classifyClaims", () => {
  it("answers in input order whatever order the statement returned rows in", () => {
    const events = ["c", "a", "b"].map((eventId) => ({ eventId, eventType: "t" }));
    const rows = [row("a", { claimed_now: true, claim_token: "tok-a" }), row("b"), row("c", { status: "processing", lease_expires_at: T1 })];
    const out = classifyClaims("src", events, rows);
    expect(out.map((r) => [r.eventId, r.outcome])).toEqual([
      ["c", "in_flight"],
      ["a", "claimed"],
      ["b", "duplicate"],
    ]);
  });

  it("gives the token, the kind and the lease only to the claimer; in_flight shows the lease but no token", () => {
    const rows = [
      row("mine", { claimed_now: true, claim_token: "tok", status: "processing", lease_expires_at: T1, claim_kind: "lease_takeover" }),
      row("theirs", { status: "processing", lease_expires_at: T1, claim_token: null }),
      row("old", { duplicate_count: 4 }),
    ];
    const [mine, theirs, old] = classifyClaims(
      "src",
      ["mine", "theirs", "old"].map((eventId) => ({ eventId, eventType: "t" })),
      rows,
    );
    expect(mine).toEqual({
      outcome: "claimed",
      source: "src",
      eventId: "mine",
      status: "processing",
      firstSeenAt: T0.toISOString(),
      expiresAt: T1.toISOString(),
      duplicateCount: 0,
      claimKind: "lease_takeover",
      claimToken: "tok",
      leaseExpiresAt: T1.toISOString(),
    });
    expect(theirs.outcome).toBe("in_flight");
    expect(theirs.leaseExpiresAt).toBe(T1.toISOString());
    expect(theirs.claimToken).toBeUndefined();
    expect(theirs.claimKind).toBeUndefined();
    expect(old).toMatchObject({ outcome: "duplicate", duplicateCount: 4 });
    expect(old.claimToken).toBeUndefined();
    expect(old.leaseExpiresAt).toBeUndefined();
  });

  it("reports payload_mismatch when the caller's hash differs from the stored one (even if the key is in flight)", () => {
    const rows = [row("x", { payload_hash: H1, status: "processing", lease_expires_at: T1 })];
    expect(classifyClaims("s", [{ eventId: "x", eventType: "t", payloadHash: H2 }], rows)[0].outcome).toBe("payload_mismatch");
    expect(classifyClaims("s", [{ eventId: "x", eventType: "t", payloadHash: H1 }], rows)[0].outcome).toBe("in_flight");
    expect(classifyClaims("s", [{ eventId: "x", eventType: "t" }], rows)[0].outcome).toBe("in_flight");
  });

  it("answers a repeat inside the batch duplicate after its first (claimed) occurrence, without a token", () => {
    const rows = [row("x", { claimed_now: true, claim_token: "tok", duplicate_count: 2 })];
    const out = classifyClaims("s", [0, 1, 2].map(() => ({ eventId: "x", eventType: "t" })), rows);
    expect(out.map((r) => r.outcome)).toEqual(["claimed", "duplicate", "duplicate"]);
    expect(out.map((r) => r.claimToken)).toEqual(["tok", undefined, undefined]);
  });

  it("repeats of an id held by someone else stay in_flight", () => {
    const rows = [row("x", { status: "processing", lease_expires_at: T1 })];
    const out = classifyClaims("s", [{ eventId: "x", eventType: "t" }, { eventId: "x", eventType: "t" }], rows);
    expect(out.map((r) => r.outcome)).toEqual(["in_flight", "in_flight"]);
  });

  it("a repeat whose hash differs from the hash this batch just stored is a payload_mismatch (contract of classifyClaims)", () => {
    const rows = [row("x", { claimed_now: true, claim_token: "tok", payload_hash: H1 })];
    const out = classifyClaims(
      "s",
      [
        { eventId: "x", eventType: "t", payloadHash: H1 },
        { eventId: "x", eventType: "t", payloadHash: H2 },
      ],
      rows,
    );
    expect(out.map((r) => r.outcome)).toEqual(["claimed", "payload_mismatch"]);
  });

  it("answers a repeat of the caller's own attempt claimed + repeat with its token; its in-batch repeats duplicate; a hash conflict wins", () => {
    const lease = new Date("2026-12-02T10:05:00.000Z");
    const r = row("a", { is_repeat: true, claim_token: "tok", status: "processing", lease_expires_at: lease });
    const [first, again] = classifyClaims("s", [{ eventId: "a", eventType: "t" }, { eventId: "a", eventType: "t" }], [r]);
    expect(first).toMatchObject({ outcome: "claimed", repeat: true, claimToken: "tok", leaseExpiresAt: lease.toISOString() });
    expect(again.outcome).toBe("duplicate");
    expect(again.claimToken).toBeUndefined();
    const fresh = classifyClaims("s", [{ eventId: "a", eventType: "t" }], [row("a", { claimed_now: true, claim_token: "tok" })]);
    expect(fresh[0].repeat).toBeUndefined();
    const clash = classifyClaims("s", [{ eventId: "a", eventType: "t", payloadHash: "b".repeat(64) }], [
      row("a", { is_repeat: true, claim_token: "tok", payload_hash: "a".repeat(64) }),
    ]);
    expect(clash[0]).toMatchObject({ outcome: "payload_mismatch" });
    expect(clash[0].claimToken).toBeUndefined();
  });

  it("throws if the statement returned no row for an input event", () => {
    expect(() => classifyClaims("s", [{ eventId: "missing", eventType: "t" }], [row("other")])).toThrow(/missing/);
  });
});
