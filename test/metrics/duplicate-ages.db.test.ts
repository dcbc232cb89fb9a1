/**
 * The duplicate-age histogram (issue 14 §1): bucket edges and quantiles (pure), and on the real
 * PostgreSQL, the ages recorded per source through every claim path — one claim over HTTP, a batch
 * (with a repeat inside it), the in-process library — flushed with the outcome counters; claims made on
 * the caller's own connection are left out, like their outcome counts.
 */
import { connectionDb } from "@/lib/db/transaction";
import { describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as batchRoute } from "@/app/api/v1/claims/batch/route";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { pool } from "@/lib/db/client";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { duplicateAgeHistogram } from "@/lib/metrics/duplicate-age-history";
import {
  addAges,
  AGE_BUCKETS,
  BUCKET_COUNT,
  bucketIndex,
  duplicateAgesOf,
  emptyHistogram,
  quantileUpperBound,
} from "@/lib/metrics/duplicate-ages";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey, post } from "@/test/setup/http";

const M = 60;
const H = 3600;
const D = 86400;

const T0 = Date.parse("2026-12-01T12:00:00Z");

describe("bucket edges", () => {
  it("has the fourteen edges of the issue, in order, and an overflow bucket", () => {
    expect([...AGE_BUCKETS]).toEqual([1, 10, M, 10 * M, H, 6 * H, D, 2 * D, 3 * D, 5 * D, 7 * D, 14 * D, 30 * D, 90 * D]);
    expect(BUCKET_COUNT).toBe(15);
  });

  it("counts an age equal to an edge in that edge's bucket, and a hair above it in the next", () => {
    AGE_BUCKETS.forEach((edge, i) => {
      expect(bucketIndex(edge), `age ${edge}`).toBe(i);
      expect(bucketIndex(edge + 0.001), `age ${edge}.001`).toBe(i + 1);
    });
  });

  it("puts 0 and negative ages (a clock step) in the first bucket, and what is past 90 days or not finite in the overflow", () => {
    expect(bucketIndex(0)).toBe(0);
    expect(bucketIndex(-5)).toBe(0);
    expect(bucketIndex(90 * D + 1)).toBe(14);
    expect(bucketIndex(Number.POSITIVE_INFINITY)).toBe(14);
    expect(bucketIndex(Number.NaN)).toBe(14);
  });

  it("quantiles are the upper edge of the bucket that holds them, never above the largest age", () => {
    const h = addAges(emptyHistogram(), [...Array<number>(990).fill(5), ...Array<number>(9).fill(2 * H), 3 * D + 2 * H]);
    expect(quantileUpperBound(h, 0.5)).toBe(10);
    expect(quantileUpperBound(h, 0.99)).toBe(10);
    expect(quantileUpperBound(h, 0.999)).toBe(6 * H);
    expect(quantileUpperBound(h, 1)).toBe(3 * D + 2 * H); // bucket ≤5 d, capped at the max
    expect(quantileUpperBound(emptyHistogram(), 0.5)).toBeNull();
    const overflow = addAges(emptyHistogram(), [100 * D]);
    expect(quantileUpperBound(overflow, 0.5)).toBe(100 * D);
  });

  it("takes the ages of duplicate answers only, repeats of a claim left out, an in-batch repeat of a new key at 0", () => {
    const rows = [
      { event_id: "a", received_at: new Date(T0 - 7200_000), db_now: new Date(T0) },
      { event_id: "b", received_at: new Date(T0 - 10), db_now: new Date(T0) },
      { event_id: "c", received_at: new Date(T0 - 99_000), db_now: new Date(T0) },
    ];
    const ages = duplicateAgesOf(
      [
        { eventId: "a", outcome: "duplicate" },
        { eventId: "b", outcome: "claimed" },
        { eventId: "b", outcome: "duplicate" },
        { eventId: "c", outcome: "claimed", repeat: true },
        { eventId: "c", outcome: "in_flight" },
      ],
      rows,
    );
    expect(ages).toEqual([7200, 0.01]);
  });
});

/** The source's histogram, summed over every minute it has. */
async function histogramOf(source: string) {
  await flushClaimCounts();
  return duplicateAgeHistogram(source, new Date(0), new Date(Date.now() + 3600_000));
}

/** Makes the key look `seconds` older: its first claim moved back. */
async function age(source: string, eventId: string, seconds: number) {
  await sql(
    `UPDATE dedup_keys SET received_at = received_at - make_interval(secs => $3), expires_at = expires_at
     WHERE source = $1 AND event_id = $2`,
    [source, eventId, seconds],
  );
}

const only = (counts: number[], at: Record<number, number>) => {
  const expected = new Array<number>(BUCKET_COUNT).fill(0);
  for (const [i, n] of Object.entries(at)) expected[Number(i)] = n;
  expect(counts).toEqual(expected);
};

describe("duplicate ages recorded per source (real PostgreSQL)", () => {
  it("one claim over HTTP: the age since the key's first claim, in its own source's histogram", async () => {
    const { key } = await makeApiKey(["claims:write"]);
    const a = await makeSource(30 * D);
    const b = await makeSource(30 * D);
    const ea = uniq("e");
    const eb = uniq("e");
    for (const [source, eventId] of [[a, ea], [b, eb]]) {
      expect((await post(claimRoute, { source, eventId, eventType: "t" }, { key })).status).toBe(201);
    }
    await age(a, ea, 2 * H); // a's duplicate arrives 2 h after the first claim: ≤ 6 h
    expect((await post(claimRoute, { source: a, eventId: ea, eventType: "t" }, { key })).body.outcome).toBe("duplicate");
    expect((await post(claimRoute, { source: b, eventId: eb, eventType: "t" }, { key })).body.outcome).toBe("duplicate");
    expect((await post(claimRoute, { source: b, eventId: eb, eventType: "t" }, { key })).body.outcome).toBe("duplicate");

    const ha = await histogramOf(a);
    only(ha.counts, { 5: 1 });
    expect(ha.maxAgeSeconds).toBeGreaterThanOrEqual(2 * H);
    expect(ha.maxAgeSeconds).toBeLessThan(2 * H + 60);
    const hb = await histogramOf(b);
    only(hb.counts, { 0: 2 }); // seconds old: ≤ 1 s (or ≤ 10 s on a very slow machine)
    expect(hb.maxAgeSeconds).toBeLessThan(10);
  });

  it("a batch: each duplicate with its key's age, a repeat inside the batch as a fresh duplicate, the new key not at all", async () => {
    const { key } = await makeApiKey(["claims:write"]);
    const source = await makeSource(30 * D);
    const old = uniq("old");
    const older = uniq("older");
    await claimEvents({ source, events: [{ eventId: old, eventType: "t" }, { eventId: older, eventType: "t" }] });
    await age(source, old, 2 * D + H); // ≤ 3 d
    await age(source, older, 20 * D); // ≤ 30 d
    await flushClaimCounts();
    const before = await histogramOf(source);
    only(before.counts, {});

    const fresh = uniq("new");
    const res = await post(
      batchRoute,
      { source, events: [old, fresh, fresh, older].map((eventId) => ({ eventId, eventType: "t" })) },
      { key },
    );
    expect(res.body.results.map((r: { outcome: string }) => r.outcome)).toEqual(["duplicate", "claimed", "duplicate", "duplicate"]);
    const h = await histogramOf(source);
    only(h.counts, { 0: 1, 8: 1, 12: 1 });
    expect(h.maxAgeSeconds).toBeGreaterThanOrEqual(20 * D);
  });

  it("in-process library claims count; claims on the caller's own connection do not (it may roll them back)", async () => {
    const source = await makeSource(30 * D);
    const e = uniq("lib");
    await claimEvent({ source, eventId: e, eventType: "t" });
    await age(source, e, 40 * M); // ≤ 1 h
    expect((await claimEvent({ source, eventId: e, eventType: "t" })).outcome).toBe("duplicate");
    expect((await claimEvents({ source, events: [{ eventId: e, eventType: "t" }] }))[0].outcome).toBe("duplicate");

    const client = await pool().connect();
    try {
      await client.query("BEGIN");
      expect((await claimEvent({ source, eventId: e, eventType: "t" }, {}, connectionDb(client))).outcome).toBe("duplicate");
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    only((await histogramOf(source)).counts, { 4: 2 });
  });

  it("a reclaim after expiry starts the age again: the next duplicate is young", async () => {
    const source = await makeSource(60);
    const e = uniq("re");
    await claimEvent({ source, eventId: e, eventType: "t" });
    await sql("UPDATE dedup_keys SET received_at = now() - interval '2 hours', expires_at = now() - interval '1 hour' WHERE source = $1 AND event_id = $2", [source, e]);
    const again = await claimEvent({ source, eventId: e, eventType: "t" });
    expect(again.claimKind).toBe("reclaimed_after_expiry");
    expect((await claimEvent({ source, eventId: e, eventType: "t" })).outcome).toBe("duplicate");
    only((await histogramOf(source)).counts, { 0: 1 });
  });
});
