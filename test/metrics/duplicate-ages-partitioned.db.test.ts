/**
 * Duplicate ages in partition mode: keyward_claim_partitioned answers the same age column as CLAIM_SQL,
 * so duplicates of a partitioned dedup table land in the histogram alike. Its own database (switching the
 * table's mode would disturb the other test files).
 */
import { describe, expect, it } from "vitest";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { forgetDedupMode } from "@/lib/claims/mode";
import { cliPrincipal } from "@/lib/auth/principal";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { duplicateAgeHistogram } from "@/lib/metrics/duplicate-age-history";
import { enablePartitionMode } from "@/lib/retention/partitions";
import { makeSource, sql, uniq } from "@/test/setup/db";


describe("partition mode", () => {
  it("records each duplicate's age since its key's first claim", async () => {
    await enablePartitionMode(cliPrincipal());
    forgetDedupMode();
    const source = await makeSource(30 * 86400);
    const e = uniq("p");
    await claimEvent({ source, eventId: e, eventType: "t" });
    await sql("UPDATE dedup_keys SET received_at = received_at - interval '3 days 1 hour' WHERE source = $1 AND event_id = $2", [source, e]);
    expect((await claimEvent({ source, eventId: e, eventType: "t" })).outcome).toBe("duplicate");
    const fresh = uniq("p");
    const batch = await claimEvents({ source, events: [{ eventId: fresh, eventType: "t" }, { eventId: fresh, eventType: "t" }] });
    expect(batch.map((r) => r.outcome)).toEqual(["claimed", "duplicate"]);
    await flushClaimCounts();
    const h = await duplicateAgeHistogram(source, new Date(0), new Date(Date.now() + 3600_000));
    expect(h.counts[0]).toBe(1); // the repeat inside the batch
    expect(h.counts[9]).toBe(1); // 3 d 1 h: ≤ 5 d
    expect(h.counts.reduce((a, b) => a + b, 0)).toBe(2);
    expect(h.maxAgeSeconds).toBeGreaterThanOrEqual(3 * 86400 + 3600);
  });
});
