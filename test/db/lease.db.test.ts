/**
 * lib/db/lease.ts: one holder at a time per lease name, on the database clock, with no session state.
 * Renewal keeps a running job's lease past its length; a dead holder's lease lapses; a holder whose
 * lease was taken over learns it through `lost`; a failing job still gives the lease back.
 */
import { connectionDb } from "@/lib/db/transaction";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { releaseLease, renewLease, takeLease, withLease } from "@/lib/db/lease";
import { sql, uniq } from "@/test/setup/db";
import { timePasses } from "@/test/setup/time";

describe("leases", () => {
  it("one holder at a time; the holder may take it again (renew); release frees it", async () => {
    const name = uniq("job");
    expect(await takeLease(name, "a", 60)).toBe(true);
    expect(await takeLease(name, "b", 60)).toBe(false);
    expect(await takeLease(name, "a", 60)).toBe(true);
    expect(await renewLease(name, "b", 60)).toBe(false);
    await releaseLease(name, "b"); // not b's: nothing happens
    expect(await takeLease(name, "b", 60)).toBe(false);
    await releaseLease(name, "a");
    expect(await takeLease(name, "b", 60)).toBe(true);
    await releaseLease(name, "b");
  });

  it("many takers on separate connections at once: exactly one gets it", async () => {
    const name = uniq("job");
    const clients = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
        await c.connect();
        return c;
      }),
    );
    try {
      const got = await Promise.all(clients.map((c, i) => takeLease(name, `holder-${i}`, 60, connectionDb(c))));
      expect(got.filter(Boolean)).toHaveLength(1);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
    await sql("DELETE FROM job_leases WHERE name = $1", [name]);
  });

  it("a dead holder's lease lapses at lease_until (database clock)", async () => {
    const name = uniq("job");
    expect(await takeLease(name, "dead", 60)).toBe(true);
    expect(await takeLease(name, "alive", 60)).toBe(false);
    // Its lease_until passes (set by SQL rather than waited for).
    await sql("UPDATE job_leases SET lease_until = now() - interval '1 millisecond' WHERE name = $1", [name]);
    expect(await takeLease(name, "alive", 60)).toBe(true);
    // The dead holder, should it wake up, no longer has it.
    expect(await renewLease(name, "dead", 60)).toBe(false);
    await releaseLease(name, "alive");
  });

  it("withLease renews while the job runs, releases at the end, and skips when held", async () => {
    const name = uniq("job");
    const outcome = await withLease(name, 0.6, async (lease) => {
      expect((await withLease(name, 0.6, async () => "second")).held).toBe(false);
      await timePasses(1500, "2.5 lease lengths (0.6 s): without renewal the lease would have lapsed and the intruder would take it");
      expect(await takeLease(name, "intruder", 60)).toBe(false);
      expect(lease.lost.aborted).toBe(false);
      return "done";
    });
    expect(outcome).toEqual({ held: true, value: "done" });
    expect(await sql("SELECT 1 FROM job_leases WHERE name = $1", [name])).toEqual([]);
  });

  it("a holder whose lease was taken over is told through `lost`; a failing job still releases", async () => {
    const name = uniq("job");
    const failing = withLease(name, 0.3, async (lease) => {
      // Another holder takes over (as after this process froze past lease_until).
      await sql("UPDATE job_leases SET holder = 'usurper' WHERE name = $1", [name]);
      await new Promise<void>((resolve) => lease.lost.addEventListener("abort", () => resolve(), { once: true }));
      throw lease.lost.reason;
    });
    await expect(failing).rejects.toThrow(/lease lapsed and was taken by another holder/);
    // Releasing is the holder's own: the usurper's lease stays.
    expect(await sql<{ holder: string }>("SELECT holder FROM job_leases WHERE name = $1", [name])).toEqual([{ holder: "usurper" }]);
    await releaseLease(name, "usurper");

    const thrown = withLease(name, 60, async () => {
      throw new Error("job failed");
    });
    await expect(thrown).rejects.toThrow("job failed");
    expect(await takeLease(name, "next", 60)).toBe(true);
    await releaseLease(name, "next");
  });
});
