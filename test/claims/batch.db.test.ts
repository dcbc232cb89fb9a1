/** POST /api/v1/claims/batch and claimEvents: limits, input order, in-batch repeats, mixed outcomes. */
import { beforeAll, describe, expect, it } from "vitest";
import { POST as batchRoute } from "@/app/api/v1/claims/batch/route";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { HASH_A, HASH_B, auditRows, isErrorBody, keyRow, makeApiKey, post } from "@/test/setup/http";

let key: string;
beforeAll(async () => {
  ({ key } = await makeApiKey(["claims:write"]));
});

const batch = (body: unknown) => post(batchRoute, body, { key });

describe("POST /api/v1/claims/batch", () => {
  it("claims 1000 events in one call, answering in input order", async () => {
    const source = await makeSource(3600);
    // Input order deliberately not sorted, so an implementation that returns rows in key order fails.
    const ids = Array.from({ length: 1000 }, (_, i) => `e-${(i * 7919) % 1000}-${uniq("b")}`);
    const res = await batch({ source, events: ids.map((eventId) => ({ eventId, eventType: "t" })) });
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(1000);
    expect(res.body.results.map((r: { eventId: string }) => r.eventId)).toEqual(ids);
    expect(res.body.results.every((r: { outcome: string; status: string }) => r.outcome === "claimed" && r.status === "done")).toBe(
      true,
    );
    const [counts] = await sql<{ keys: number; audits: number; exact: number }>(
      `SELECT (SELECT count(*) FROM dedup_keys WHERE source = $1) AS keys,
              (SELECT count(*) FROM audit_events WHERE source = $1 AND kind = 'claimed') AS audits,
              (SELECT count(*) FROM dedup_keys WHERE source = $1 AND expires_at - received_at = interval '3600 seconds') AS exact`,
      [source],
    );
    expect(counts).toEqual({ keys: 1000, audits: 1000, exact: 1000 });
  });

  it("a batch of 1 is fine", async () => {
    const source = await makeSource();
    const res = await batch({ source, events: [{ eventId: uniq("e"), eventType: "t" }] });
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(1);
    expect(res.body.results[0].outcome).toBe("claimed");
  });

  it("1001 events → 422 naming the events field, and nothing is claimed", async () => {
    const source = await makeSource();
    const events = Array.from({ length: 1001 }, (_, i) => ({ eventId: `e${i}`, eventType: "t" }));
    const res = await batch({ source, events });
    expect(res.status).toBe(422);
    expect(isErrorBody(res.body)).toBe(true);
    expect(res.body.error.code).toBe("invalid_request");
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toContain("events");
    expect(res.body.error.message).toMatch(/1000/);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n).toBe(0);
  });

  it("0 events → 422", async () => {
    const source = await makeSource();
    const res = await batch({ source, events: [] });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields[0].field).toBe("events");
  });

  it("a bad event inside the batch is named by its index", async () => {
    const source = await makeSource();
    const res = await batch({ source, events: [{ eventId: "ok", eventType: "t" }, { eventId: "", eventType: "t" }] });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields.map((f: { field: string }) => f.field)).toEqual(["events.1.eventId"]);
  });

  it("an unknown source → 422 unknown_source", async () => {
    const res = await batch({ source: uniq("nosuch"), events: [{ eventId: "a", eventType: "t" }] });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("unknown_source");
  });

  it("a repeated id inside one batch is claimed once and reported duplicate after its first occurrence", async () => {
    const source = await makeSource();
    const [a, b, c] = [uniq("a"), uniq("b"), uniq("c")];
    const res = await batch({
      source,
      leaseSeconds: 60,
      events: [a, b, a, c, a, b].map((eventId) => ({ eventId, eventType: "t" })),
    });
    expect(res.status).toBe(200);
    const results = res.body.results as { eventId: string; outcome: string; claimToken?: string; duplicateCount: number }[];
    expect(results.map((r) => [r.eventId, r.outcome])).toEqual([
      [a, "claimed"],
      [b, "claimed"],
      [a, "duplicate"],
      [c, "claimed"],
      [a, "duplicate"],
      [b, "duplicate"],
    ]);
    // Only the first occurrence carries the claim token.
    expect(results.filter((r) => r.claimToken).map((r) => r.eventId)).toEqual([a, b, c]);
    expect((await keyRow(source, a))!.duplicate_count).toBe(2);
    expect((await keyRow(source, b))!.duplicate_count).toBe(1);
    expect((await keyRow(source, c))!.duplicate_count).toBe(0);
    expect((await keyRow(source, a))!.last_duplicate_at).not.toBeNull();
    expect((await keyRow(source, c))!.last_duplicate_at).toBeNull();
    // One audit row per claimed key, none for the repeats.
    expect((await auditRows(source)).length).toBe(3);
    expect((await auditRows(source, a)).map((r) => r.kind)).toEqual(["claimed"]);
  });

  it("mixed outcomes in one batch: duplicate, in_flight, payload_mismatch, lease takeover, reclaim, claimed", async () => {
    const source = await makeSource();
    const [dup, busy, hashed, lapsed, expired, fresh] = ["dup", "busy", "hashed", "lapsed", "expired", "fresh"].map((p) => uniq(p));
    await claimEvent({ source, eventId: dup, eventType: "t" });
    await claimEvent({ source, eventId: busy, eventType: "t", leaseSeconds: 600 });
    await claimEvent({ source, eventId: hashed, eventType: "t", payloadHash: HASH_A });
    await claimEvent({ source, eventId: lapsed, eventType: "t", leaseSeconds: 600 });
    await claimEvent({ source, eventId: expired, eventType: "t" });
    await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, lapsed]);
    await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, expired]);

    const order = [fresh, hashed, dup, expired, busy, lapsed];
    const res = await batch({
      source,
      leaseSeconds: 30,
      events: order.map((eventId) => ({ eventId, eventType: "t", ...(eventId === hashed ? { payloadHash: HASH_B } : {}) })),
    });
    expect(res.status).toBe(200);
    const got = (res.body.results as { eventId: string; outcome: string; claimKind?: string }[]).map((r) => [
      r.eventId,
      r.outcome,
      r.claimKind,
    ]);
    expect(got).toEqual([
      [fresh, "claimed", "claimed"],
      [hashed, "payload_mismatch", undefined],
      [dup, "duplicate", undefined],
      [expired, "claimed", "reclaimed_after_expiry"],
      [busy, "in_flight", undefined],
      [lapsed, "claimed", "lease_takeover"],
    ]);
    const kinds = await sql<{ event_id: string; kind: string }>(
      "SELECT event_id, kind FROM audit_events WHERE source = $1 ORDER BY at, id",
      [source],
    );
    const afterBatch = kinds.slice(5).map((k) => [k.event_id, k.kind]).sort();
    expect(afterBatch).toEqual(
      [
        [fresh, "claimed"],
        [expired, "reclaimed_after_expiry"],
        [lapsed, "lease_takeover"],
      ].sort(),
    );
    expect(kinds).toHaveLength(8);
  });

  it("in-batch repeats of a lease taken over are counted like any duplicate (duplicate_count and last_duplicate_at)", async () => {
    const source = await makeSource();
    const id = uniq("e");
    await claimEvent({ source, eventId: id, eventType: "t", leaseSeconds: 600 });
    await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, id]);
    const results = await claimEvents({ source, leaseSeconds: 60, events: [{ eventId: id, eventType: "t" }, { eventId: id, eventType: "t" }] });
    expect(results.map((r) => [r.outcome, r.claimKind])).toEqual([
      ["claimed", "lease_takeover"],
      ["duplicate", undefined],
    ]);
    const row = (await keyRow(source, id))!;
    expect(row.duplicate_count).toBe(1);
    // A counted duplicate always has a time: the same rule as a fresh claim with in-batch repeats.
    expect(row.last_duplicate_at).not.toBeNull();
  });

  it("repeated ids with the hash of the stored key are duplicates; a different hash is a payload_mismatch", async () => {
    const source = await makeSource();
    const stored = uniq("stored");
    await claimEvent({ source, eventId: stored, eventType: "t", payloadHash: HASH_A });
    const results = await claimEvents({
      source,
      events: [
        { eventId: stored, eventType: "t", payloadHash: HASH_A },
        { eventId: stored, eventType: "t", payloadHash: HASH_B },
        { eventId: stored, eventType: "t" },
      ],
    });
    expect(results.map((r) => r.outcome)).toEqual(["duplicate", "payload_mismatch", "duplicate"]);
    expect((await keyRow(source, stored))!.duplicate_count).toBe(2);
  });

  it("an id claimed by this batch and repeated with a different payload hash is a payload_mismatch, not a duplicate", async () => {
    // The first occurrence stores HASH_A; the second carries HASH_B for the same id. By the claim rules
    // (and classify.ts's own contract) that repeat differs from the stored hash, so it is a mismatch.
    const source = await makeSource();
    const id = uniq("e");
    const results = await claimEvents({
      source,
      events: [
        { eventId: id, eventType: "t", payloadHash: HASH_A },
        { eventId: id, eventType: "t", payloadHash: HASH_B },
      ],
    });
    expect(results.map((r) => r.outcome)).toEqual(["claimed", "payload_mismatch"]);
    // Claiming the same two events one at a time gives the same answers.
    const other = uniq("e");
    const one = await claimEvent({ source, eventId: other, eventType: "t", payloadHash: HASH_A });
    const two = await claimEvent({ source, eventId: other, eventType: "t", payloadHash: HASH_B });
    expect([one.outcome, two.outcome]).toEqual(["claimed", "payload_mismatch"]);
  });
});
