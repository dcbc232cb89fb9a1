/**
 * Races: many callers claiming the same ids at once must yield exactly one claim per id, every other
 * caller a duplicate, and dedup_keys / audit_events agreeing with the answers.
 */
import { describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as batchRoute } from "@/app/api/v1/claims/batch/route";
import { claimEvent } from "@/lib/claims/claim";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey, post } from "@/test/setup/http";

const IDS = 20;
const CALLS = 200;

async function tableCounts(source: string) {
  const [c] = await sql<{ keys: number; dups: number; audits: number; audited_ids: number; claimed_kind: number }>(
    `SELECT (SELECT count(*) FROM dedup_keys WHERE source = $1) AS keys,
            (SELECT coalesce(sum(duplicate_count), 0)::int FROM dedup_keys WHERE source = $1) AS dups,
            (SELECT count(*) FROM audit_events WHERE source = $1) AS audits,
            (SELECT count(DISTINCT event_id) FROM audit_events WHERE source = $1 AND kind = 'claimed') AS audited_ids,
            (SELECT count(*) FROM dedup_keys WHERE source = $1 AND claim_kind = 'claimed') AS claimed_kind`,
    [source],
  );
  return c;
}

function perId(results: { eventId: string; outcome: string }[]) {
  const m = new Map<string, { claimed: number; duplicate: number }>();
  for (const r of results) {
    const c = m.get(r.eventId) ?? { claimed: 0, duplicate: 0 };
    if (r.outcome === "claimed") c.claimed++;
    else if (r.outcome === "duplicate") c.duplicate++;
    m.set(r.eventId, c);
  }
  return m;
}

describe("concurrent claims", () => {
  it(`library: ${CALLS} concurrent claims over ${IDS} ids → ${IDS} claimed, ${CALLS - IDS} duplicates`, async () => {
    const source = await makeSource();
    const ids = Array.from({ length: IDS }, (_, i) => uniq(`c${i}`));
    const results = await Promise.all(
      Array.from({ length: CALLS }, (_, i) => claimEvent({ source, eventId: ids[i % IDS], eventType: "t" })),
    );
    const outcomes = results.map((r) => r.outcome);
    expect(outcomes.filter((o) => o === "claimed")).toHaveLength(IDS);
    expect(outcomes.filter((o) => o === "duplicate")).toHaveLength(CALLS - IDS);
    for (const [, c] of perId(results)) expect(c).toEqual({ claimed: 1, duplicate: CALLS / IDS - 1 });
    // Exactly one distinct token per id was handed out.
    expect(new Set(results.filter((r) => r.claimToken).map((r) => r.claimToken)).size).toBe(IDS);
    expect(await tableCounts(source)).toEqual({
      keys: IDS,
      dups: CALLS - IDS,
      audits: IDS,
      audited_ids: IDS,
      claimed_kind: IDS,
    });
  });

  it(`HTTP route with leases: ${CALLS} concurrent POSTs over ${IDS} ids → ${IDS}×201, ${CALLS - IDS}×409 in_flight`, async () => {
    const { key } = await makeApiKey(["claims:write"]);
    const source = await makeSource();
    const ids = Array.from({ length: IDS }, (_, i) => uniq(`h${i}`));
    const responses = await Promise.all(
      Array.from({ length: CALLS }, (_, i) => post(claimRoute, { source, eventId: ids[i % IDS], eventType: "t", leaseSeconds: 60 }, { key })),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(IDS);
    // With a lease running, the losers see the key in flight (409), not a duplicate.
    expect(statuses.filter((s) => s === 409)).toHaveLength(CALLS - IDS);
    const winners = responses.filter((r) => r.status === 201).map((r) => r.body.eventId);
    expect(new Set(winners).size).toBe(IDS);
    const [c] = await sql<{ keys: number; audits: number; processing: number }>(
      `SELECT (SELECT count(*) FROM dedup_keys WHERE source = $1) AS keys,
              (SELECT count(*) FROM audit_events WHERE source = $1 AND kind = 'claimed') AS audits,
              (SELECT count(*) FROM dedup_keys WHERE source = $1 AND status = 'processing') AS processing`,
      [source],
    );
    expect(c).toEqual({ keys: IDS, audits: IDS, processing: IDS });
  });

  it(`HTTP route without leases: ${CALLS} concurrent POSTs → ${IDS}×201 claimed, ${CALLS - IDS}×200 duplicate`, async () => {
    const { key } = await makeApiKey(["claims:write"]);
    const source = await makeSource();
    const ids = Array.from({ length: IDS }, (_, i) => uniq(`d${i}`));
    const responses = await Promise.all(
      Array.from({ length: CALLS }, (_, i) => post(claimRoute, { source, eventId: ids[i % IDS], eventType: "t" }, { key })),
    );
    expect(responses.filter((r) => r.status === 201)).toHaveLength(IDS);
    expect(responses.filter((r) => r.status === 200 && r.body.outcome === "duplicate")).toHaveLength(CALLS - IDS);
    for (const [, c] of perId(responses.map((r) => r.body))) expect(c).toEqual({ claimed: 1, duplicate: CALLS / IDS - 1 });
    expect(await tableCounts(source)).toEqual({ keys: IDS, dups: CALLS - IDS, audits: IDS, audited_ids: IDS, claimed_kind: IDS });
  });

  it("overlapping batches in different orders neither deadlock nor double-claim", async () => {
    const { key } = await makeApiKey(["claims:write"]);
    const source = await makeSource();
    const ids = Array.from({ length: 50 }, (_, i) => uniq(`b${i}`));
    // Each batch sees the ids in its own order: rotated, and reversed for every other batch.
    const ordered = (i: number) => {
      const rotated = [...ids.slice(i * 5), ...ids.slice(0, i * 5)];
      return i % 2 ? rotated.reverse() : rotated;
    };
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        post(batchRoute, { source, events: ordered(i).map((eventId) => ({ eventId, eventType: "t" })) }, { key }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    const all = responses.flatMap((r) => r.body.results as { eventId: string; outcome: string }[]);
    expect(all.filter((r) => r.outcome === "claimed")).toHaveLength(50);
    expect(all.filter((r) => r.outcome === "duplicate")).toHaveLength(450);
    expect(await tableCounts(source)).toEqual({ keys: 50, dups: 450, audits: 50, audited_ids: 50, claimed_kind: 50 });
  });

  it("a lapsed lease raced by many callers is taken over exactly once", async () => {
    const source = await makeSource();
    const eventId = uniq("lease");
    await claimEvent({ source, eventId, eventType: "t", leaseSeconds: 600 });
    await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, eventId]);
    const results = await Promise.all(
      Array.from({ length: 30 }, () => claimEvent({ source, eventId, eventType: "t", leaseSeconds: 600 })),
    );
    expect(results.filter((r) => r.outcome === "claimed")).toHaveLength(1);
    expect(results.filter((r) => r.outcome === "in_flight")).toHaveLength(29);
    const [c] = await sql<{ takeovers: number }>(
      "SELECT count(*) AS takeovers FROM audit_events WHERE source = $1 AND kind = 'lease_takeover'",
      [source],
    );
    expect(c.takeovers).toBe(1);
  });
});
