/**
 * The attemptId contract (issue 11, "ambiguous claims"), through the in-process library, in both table
 * modes (a database of this file's own, switched to partition mode halfway): a claim retried with the
 * attemptId that made it gets its `claimed` answer back, marked `repeat`, with the same claim token;
 * anyone else still gets `duplicate`; a repeat changes and counts nothing; the stored attempt survives
 * `partitions enable` and `disable`. The HTTP side, with the answer
 * really lost on the network, is in test/db/faults.e2e.test.ts.
 */
import { describe, expect, it } from "vitest";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { completeClaim } from "@/lib/claims/settle";
import { disablePartitionMode, enablePartitionMode } from "@/lib/retention/partitions";
import { cliPrincipal } from "@/lib/auth/principal";
import { KeywardError } from "@/lib/errors";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { parseInput } from "@/lib/http/validate";
import { batchClaimRequest, claimRequest } from "@/lib/claims/schema";


async function keyRow(source: string, eventId: string) {
  const [row] = await sql<{ attempt_id: string | null; claim_token: string; duplicate_count: number; status: string }>(
    "SELECT attempt_id, claim_token, duplicate_count, status FROM dedup_keys WHERE source = $1 AND event_id = $2",
    [source, eventId],
  );
  return row;
}

async function claimAudit(source: string, eventId: string) {
  return sql<{ kind: string; detail: { attemptId?: string } }>(
    "SELECT kind, detail FROM audit_events WHERE source = $1 AND event_id = $2 ORDER BY id",
    [source, eventId],
  );
}

function contract(mode: "single" | "partition") {
  it(`${mode}: the same attemptId gets the claimed answer again (repeat, same token); another caller gets duplicate`, async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const attemptId = `att-${uniq("a")}`;
    const first = await claimEvent({ source, eventId, eventType: "t", attemptId });
    expect(first.outcome).toBe("claimed");
    expect(first.repeat).toBeUndefined();

    const again = await claimEvent({ source, eventId, eventType: "t", attemptId });
    expect(again).toMatchObject({ outcome: "claimed", repeat: true, claimToken: first.claimToken, claimKind: "claimed" });
    expect(again.expiresAt).toBe(first.expiresAt);

    expect(await claimEvent({ source, eventId, eventType: "t" })).toMatchObject({ outcome: "duplicate", duplicateCount: 1 });
    const other = await claimEvent({ source, eventId, eventType: "t", attemptId: `${attemptId}-other` });
    expect(other).toMatchObject({ outcome: "duplicate", duplicateCount: 2 });
    expect(other.claimToken).toBeUndefined();

    // The repeat counted nothing and wrote nothing. The audit history (readable by every viewer) never shows
    // the attempt id: it would hand out the claim's token to anyone with claims:write.
    const row = await keyRow(source, eventId);
    expect(row).toMatchObject({ attempt_id: attemptId, claim_token: first.claimToken, duplicate_count: 2 });
    const audit = await claimAudit(source, eventId);
    expect(audit.map((a) => a.kind)).toEqual(["claimed"]);
    expect(JSON.stringify(audit)).not.toContain(attemptId);
  });

  it(`${mode}: a leased claim repeated by its attempt keeps its lease and can still be completed with the token`, async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const attemptId = uniq("lease-attempt");
    const first = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60, attemptId });
    const again = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60, attemptId });
    expect(again).toMatchObject({ outcome: "claimed", repeat: true, claimToken: first.claimToken, status: "processing" });
    expect(again.leaseExpiresAt).toBe(first.leaseExpiresAt);
    // Someone else meanwhile: in flight, no token.
    const other = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60 });
    expect(other.outcome).toBe("in_flight");
    expect(other.claimToken).toBeUndefined();
    expect((await completeClaim({ source, eventId, claimToken: again.claimToken! })).status).toBe("done");
    // After completion the attempt's answer is still its claim (status done now).
    expect(await claimEvent({ source, eventId, eventType: "t", attemptId })).toMatchObject({ outcome: "claimed", repeat: true, status: "done" });
  });

  it(`${mode}: a lapsed lease is taken over anew even by its own attempt (fresh token), and an expired key is reclaimed`, async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    const attemptId = uniq("lapsed");
    const first = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60, attemptId });
    await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, eventId]);
    const takeover = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60, attemptId });
    expect(takeover).toMatchObject({ outcome: "claimed", claimKind: "lease_takeover" });
    expect(takeover.repeat).toBeUndefined();
    expect(takeover.claimToken).not.toBe(first.claimToken);

    // A new attempt takes an expired key; the old attempt id no longer names the key's claim.
    const later = await makeSource(3600);
    const e2 = uniq("evt");
    await claimEvent({ source: later, eventId: e2, eventType: "t", attemptId: "old" });
    await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [later, e2]);
    const reclaimed = await claimEvent({ source: later, eventId: e2, eventType: "t", attemptId: "new" });
    expect(reclaimed).toMatchObject({ outcome: "claimed", claimKind: "reclaimed_after_expiry" });
    expect(await claimEvent({ source: later, eventId: e2, eventType: "t", attemptId: "old" })).toMatchObject({ outcome: "duplicate" });
    expect(await claimEvent({ source: later, eventId: e2, eventType: "t", attemptId: "new" })).toMatchObject({ outcome: "claimed", repeat: true });
  });

  it(`${mode}: a repeat with a different payload hash is a payload_mismatch, not a repeat`, async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claimEvent({ source, eventId, eventType: "t", payloadHash: "a".repeat(64), attemptId: "x1" });
    const r = await claimEvent({ source, eventId, eventType: "t", payloadHash: "b".repeat(64), attemptId: "x1" });
    expect(r.outcome).toBe("payload_mismatch");
    expect(r.claimToken).toBeUndefined();
  });

  it(`${mode}: a key claimed without an attemptId, claimed with one: duplicate or in_flight, never a repeat (single and batch)`, async () => {
    // The stored attempt id is NULL: the repeat test compared NULL with the new one and answered 500 (is_repeat NULL).
    const source = await makeSource();
    const [done, held] = [uniq("done"), uniq("held")];
    expect((await claimEvent({ source, eventId: done, eventType: "t" })).outcome).toBe("claimed");
    expect((await claimEvent({ source, eventId: held, eventType: "t", leaseSeconds: 300 })).outcome).toBe("claimed");

    const one = await claimEvent({ source, eventId: done, eventType: "t", attemptId: "late-1" });
    expect(one).toMatchObject({ outcome: "duplicate", duplicateCount: 1 });
    expect(one.repeat).toBeUndefined();
    expect(one.claimToken).toBeUndefined();
    const busy = await claimEvent({ source, eventId: held, eventType: "t", attemptId: "late-2" });
    expect(busy.outcome).toBe("in_flight");
    expect(busy.claimToken).toBeUndefined();

    const batch = await claimEvents({ source, attemptId: "late-3", events: [{ eventId: done, eventType: "t" }, { eventId: held, eventType: "t" }] });
    expect(batch.map((r) => [r.outcome, r.repeat ?? false, r.claimToken ?? null])).toEqual([
      ["duplicate", false, null],
      ["in_flight", false, null],
    ]);
    // Nothing of the key changed hands: still no attempt id, the held lease still the first claim's.
    expect(await keyRow(source, done)).toMatchObject({ attempt_id: null, status: "done", duplicate_count: 2 });
    expect(await keyRow(source, held)).toMatchObject({ attempt_id: null, status: "processing" });
  });

  it(`${mode}: batches: a batch-level attemptId covers every item, an item's own overrides it`, async () => {
    const source = await makeSource();
    const [a, b, c] = [uniq("a"), uniq("b"), uniq("c")];
    const batch = {
      source,
      attemptId: "batch-1",
      events: [
        { eventId: a, eventType: "t" },
        { eventId: b, eventType: "t", attemptId: "item-b" },
      ],
    };
    const first = await claimEvents(batch);
    expect(first.map((r) => r.outcome)).toEqual(["claimed", "claimed"]);
    // The retry of the whole batch, plus a new event and an in-batch repeat: repeats, a fresh claim, a duplicate.
    const again = await claimEvents({ ...batch, events: [...batch.events, { eventId: c, eventType: "t" }, { eventId: a, eventType: "t" }] });
    expect(again.map((r) => [r.outcome, r.repeat ?? false])).toEqual([
      ["claimed", true],
      ["claimed", true],
      ["claimed", false],
      ["duplicate", false],
    ]);
    expect(again[0].claimToken).toBe(first[0].claimToken);
    expect(again[1].claimToken).toBe(first[1].claimToken);
    expect((await keyRow(source, b)).attempt_id).toBe("item-b");
    // The same items under another batch attempt: duplicates.
    const other = await claimEvents({ ...batch, attemptId: "batch-2", events: [{ eventId: a, eventType: "t" }] });
    expect(other.map((r) => r.outcome)).toEqual(["duplicate"]);
  });
}

describe("attemptId", () => {
  it("is validated: 1 to 128 printable ASCII characters, no spaces or control characters", async () => {
    const source = await makeSource();
    for (const bad of ["", " ", "a b", "x".repeat(129), "tab\there", "é", "nul\u0000"]) {
      // As the route and the CLI take it: parsed by claimRequest first.
      const err = await (async () => claimEvent(parseInput(claimRequest, { source, eventId: uniq("e"), eventType: "t", attemptId: bad })))().catch((e: unknown) => e);
      expect(err, JSON.stringify(bad)).toBeInstanceOf(KeywardError);
      expect((err as KeywardError).status).toBe(422);
      expect(JSON.stringify((err as KeywardError).details)).toContain("attemptId");
    }
    const errBatch = await (async () => claimEvents(parseInput(batchClaimRequest, { source, events: [{ eventId: "e", eventType: "t", attemptId: "a b" }] })))().catch(
      (e: unknown) => e,
    );
    expect(errBatch).toMatchObject({ status: 422 });
    expect((await claimEvent({ source, eventId: uniq("e"), eventType: "t", attemptId: "x".repeat(128) })).outcome).toBe("claimed");
  });

  describe("single-table mode", () => contract("single"));

  describe("partition mode", () => {
    it("switches this database to partition mode (the attempt column moves with the rows)", async () => {
      const source = await makeSource();
      await claimEvent({ source, eventId: "kept", eventType: "t", attemptId: "before-switch" });
      await enablePartitionMode(cliPrincipal());
      expect(await claimEvent({ source, eventId: "kept", eventType: "t", attemptId: "before-switch" })).toMatchObject({
        outcome: "claimed",
        repeat: true,
      });
    });
    contract("partition");
    it("switches back to one table: attempts made in partition mode still repeat", async () => {
      const source = await makeSource();
      const made = await claimEvent({ source, eventId: "kept-2", eventType: "t", leaseSeconds: 60, attemptId: "in-partition-mode" });
      await disablePartitionMode(cliPrincipal());
      expect(await claimEvent({ source, eventId: "kept-2", eventType: "t", leaseSeconds: 60, attemptId: "in-partition-mode" })).toMatchObject({
        outcome: "claimed",
        repeat: true,
        claimToken: made.claimToken,
      });
    });
  });
});
