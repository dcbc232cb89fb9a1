/**
 * Saved results and lease extensions in both modes of dedup_keys, in a database of this file's own (it
 * switches to partition mode and measures the TOAST table): a duplicate's update keeps the saved bytes by
 * reference (the TOAST table does not grow however many duplicates come), a result survives the switch to
 * partition mode and back, and there the claim functions answer it, a batch says it is saved, a reclaim
 * drops it, the payload-hash rule holds, and an extension that moves a key to a later partition leaves one
 * row that the next claim finds.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { completeClaim, extendClaim } from "@/lib/claims/settle";
import { makeSource, sql, uniq } from "@/test/setup/db";

const HASH_A = "a".repeat(64);
const HASH_B = "b".repeat(64);

async function keepingResults(ttl = 3600): Promise<string> {
  const source = await makeSource(ttl);
  await sql("UPDATE sources SET save_results = true WHERE name = $1", [source]);
  return source;
}

async function completedWith(source: string, body: Buffer): Promise<string> {
  const eventId = uniq("evt");
  const c = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 60 });
  await completeClaim({ source, eventId, claimToken: c.claimToken!, result: { status: 201, headers: { "content-type": "application/x-bin" }, bodyBase64: body.toString("base64") } });
  return eventId;
}

/** The TOAST table's size holding this key's row (in partition mode, its partition's). */
async function toastBytes(source: string, eventId: string): Promise<number> {
  const [{ n }] = await sql<{ n: string }>(
    `SELECT pg_relation_size(c.reltoastrelid)::text AS n FROM pg_class c
     WHERE c.oid = (SELECT tableoid FROM dedup_keys WHERE source = $1 AND event_id = $2)`,
    [source, eventId],
  );
  return Number(n);
}

async function duplicates(source: string, eventId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const d = await claimEvent({ source, eventId, eventType: "t" });
    expect(d.outcome).toBe("duplicate");
  }
}

describe("saved results in both modes", () => {
  it("duplicates reuse the saved bytes (the TOAST table does not grow); the result survives mode switches", async () => {
    const source = await keepingResults();
    const body = randomBytes(48 * 1024); // incompressible: stored out of line
    const eventId = await completedWith(source, body);
    const before = await toastBytes(source, eventId);
    expect(before).toBeGreaterThanOrEqual(body.byteLength);
    await duplicates(source, eventId, 15);
    expect(await toastBytes(source, eventId)).toBe(before);

    await sql("SELECT keyward_partitions_enable(3)");
    const inPartition = await toastBytes(source, eventId);
    const d = await claimEvent({ source, eventId, eventType: "t" });
    expect(Buffer.from(d.result!.bodyBase64, "base64").equals(body)).toBe(true);
    await duplicates(source, eventId, 15);
    expect(await toastBytes(source, eventId)).toBe(inPartition);
  });

  it("partition mode: the scalar claim answers the result, the batch says it is saved, a reclaim drops it", async () => {
    const source = await keepingResults();
    const body = Buffer.from([0, 1, 2, 0xfe, 0xff]);
    const eventId = await completedWith(source, body);
    const one = await claimEvent({ source, eventId, eventType: "t" });
    expect(one).toMatchObject({ outcome: "duplicate", result: { status: 201, headers: { "content-type": "application/x-bin" }, bodyBase64: body.toString("base64") } });
    const many = await claimEvents({ source, events: [{ eventId, eventType: "t" }, { eventId: uniq("evt"), eventType: "t" }] });
    expect(many[0]).toMatchObject({ outcome: "duplicate", resultSaved: true });
    expect(many[0]).not.toHaveProperty("result");

    await sql("UPDATE dedup_keys SET expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, eventId]);
    expect((await claimEvents({ source, events: [{ eventId, eventType: "t" }, { eventId: uniq("evt"), eventType: "t" }] }))[0].claimKind).toBe(
      "reclaimed_after_expiry",
    );
    const rows = await sql<{ result_status: number | null }>("SELECT result_status FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId]);
    expect(rows).toEqual([{ result_status: null }]);
    expect(await claimEvent({ source, eventId, eventType: "t" })).not.toHaveProperty("result");
  });

  it("partition mode: the payload-hash rule, in the scalar claim and in a batch", async () => {
    const source = await makeSource();
    const eventId = uniq("evt");
    await claimEvent({ source, eventId, eventType: "t" });
    expect((await claimEvent({ source, eventId, eventType: "t", payloadHash: HASH_A })).outcome).toBe("duplicate");
    expect((await claimEvent({ source, eventId, eventType: "t", payloadHash: HASH_B })).outcome).toBe("payload_mismatch");
    const other = uniq("evt");
    await claimEvent({ source, eventId: other, eventType: "t" });
    const answers = await claimEvents({
      source,
      events: [
        { eventId: other, eventType: "t", payloadHash: HASH_B },
        { eventId: other, eventType: "t", payloadHash: HASH_A },
      ],
    });
    expect(answers.map((a) => a.outcome)).toEqual(["duplicate", "payload_mismatch"]);
  });

  it("partition mode: an extension past the TTL moves the key to a later partition; the next claim finds its one row", async () => {
    const source = await makeSource(60);
    const eventId = uniq("evt");
    const c = await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 30 });
    const part = async () =>
      sql<{ part: string }>("SELECT tableoid::regclass::text AS part FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId]);
    const [before] = await part();
    const extended = await extendClaim({ source, eventId, claimToken: c.claimToken!, leaseSeconds: 86400 });
    expect(Date.parse(extended.expiresAt)).toBeGreaterThanOrEqual(Date.parse(extended.leaseExpiresAt));
    const after = await part();
    expect(after).toHaveLength(1);
    expect(after[0].part).not.toBe(before.part);
    expect((await claimEvent({ source, eventId, eventType: "t" })).outcome).toBe("in_flight");
    await completeClaim({ source, eventId, claimToken: c.claimToken! });
    expect((await claimEvents({ source, events: [{ eventId, eventType: "t" }, { eventId: uniq("e"), eventType: "t" }] }))[0].outcome).toBe("duplicate");
    expect(await part()).toHaveLength(1);
  });
});
