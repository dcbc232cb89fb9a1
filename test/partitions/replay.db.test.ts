/**
 * Safe replay on a partitioned dedup table (partition mode), in a database of this file's own: the
 * preflight classifies from keys in any partition, and extend moves an expiring key into the partition
 * of its new expiry day, never creates a second row of a key and never resurrects an expired one.
 */
import { describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { completeClaim } from "@/lib/claims/settle";
import { cliPrincipal } from "@/lib/auth/principal";
import { createPreflight, extendPreflight } from "@/lib/replay/preflight";
import { enablePartitionMode } from "@/lib/retention/partitions";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";

const ACTOR = cliPrincipal();
const DAY = 86400;

async function rowsOf(source: string, eventId: string) {
  return sql<{ part: string; expires_at: Date }>(
    "SELECT tableoid::regclass::text AS part, expires_at FROM dedup_keys WHERE source = $1 AND event_id = $2",
    [source, eventId],
  );
}

describe("safe replay in partition mode", () => {
  it("preflight sees keys in every partition; extend moves the expiring key to its new day's partition, one row per key", async () => {
    const source = await makeSource(7 * DAY);
    await enablePartitionMode(ACTOR);
    const ids = { alive: `alive-${uniq()}`, expiring: `expiring-${uniq()}`, expired: `expired-${uniq()}`, never: `never-${uniq()}` };
    await claimEvent({ source, eventId: ids.alive, eventType: "t" });
    await claimEvent({ source, eventId: ids.expiring, eventType: "t" });
    await setKeyExpiry(source, ids.expiring, 60);
    const c = await claimEvent({ source, eventId: ids.expired, eventType: "t", leaseSeconds: 60 });
    await completeClaim({ source, eventId: ids.expired, claimToken: c.claimToken! });
    await setKeyExpiry(source, ids.expired, -10);
    await seedDeadLetters(source, Object.values(ids));

    const before = await rowsOf(source, ids.expiring);
    expect(before).toHaveLength(1);

    const pf = await createPreflight({ source, replayWindowSeconds: 3 * DAY }, ACTOR);
    const cat = (p: typeof pf) => Object.fromEntries(p.items.map((i) => [i.eventId, i.category]));
    expect(cat(pf)).toEqual({
      [ids.alive]: "alive",
      [ids.expiring]: "expiring",
      [ids.expired]: "expired_processed",
      [ids.never]: "never_processed",
    });

    const { extended, preflight } = await extendPreflight(pf.preflightId, ACTOR);
    expect(extended).toBe(1);
    expect(cat(preflight)[ids.expiring]).toBe("alive");
    expect(cat(preflight)[ids.expired]).toBe("expired_processed");

    const after = await rowsOf(source, ids.expiring);
    expect(after).toHaveLength(1);
    expect(after[0].expires_at.getTime()).toBeGreaterThan(Date.now() + 3 * DAY * 1000 - 60_000);
    // A new expiry three days later lands in another day's partition: the row moved, it was not copied.
    expect(after[0].part).not.toBe(before[0].part);
    const [{ expected }] = await sql<{ expected: string }>(
      "SELECT name AS expected FROM keyward_dedup_partitions() WHERE $1::timestamptz >= range_start AND $1::timestamptz < range_end",
      [after[0].expires_at],
    );
    expect(after[0].part).toBe(expected);

    // The expired key was not resurrected.
    const expired = await rowsOf(source, ids.expired);
    expect(expired).toHaveLength(1);
    expect(expired[0].expires_at.getTime()).toBeLessThan(Date.now());
    // And a claim of the extended key is still a duplicate: one key, one row.
    expect((await claimEvent({ source, eventId: ids.expiring, eventType: "t" })).outcome).toBe("duplicate");
    expect(await rowsOf(source, ids.expiring)).toHaveLength(1);
  });
});
