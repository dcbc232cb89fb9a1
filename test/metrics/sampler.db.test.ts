/**
 * The metrics sampler against a real PostgreSQL. Other test files share the database (and the servers
 * they start run their own samplers), so assertions are about this file's own keys, sources and
 * minutes, or are lower bounds: "at least the keys inserted here".
 */
import { database } from "@/lib/db/transaction";
import { describe, expect, it, vi } from "vitest";
import { measure, takeSample, type SampleOptions, type SampleOutcome } from "@/lib/metrics/sampler";
import { measureSourceKeys } from "@/lib/metrics/per-source";
import { makeSource, sql, uniq } from "@/test/setup/db";

/** A minute of the past no other test writes: `daysAgo` days back, at a random minute of that day. */
async function freeMinute(daysAgo: number): Promise<Date> {
  const offset = Math.floor(Math.random() * 1440);
  const [{ at }] = await sql<{ at: Date }>(
    "SELECT date_trunc('minute', now()) - make_interval(days => $1, mins => $2) AS at",
    [daysAgo, offset],
  );
  return at;
}

/** Retried while a sampler elsewhere (another test's server) holds the lock for a moment. */
const WHILE_LOCKED = { timeout: 10_000, interval: 20 };

/** takeSample, retried while another sampler holds the lock. */
function sampleOnce(options: SampleOptions): Promise<SampleOutcome> {
  return vi.waitFor(async () => {
    const r = await takeSample(options);
    if (r.outcome === "locked") throw new Error("the sampler lock is held elsewhere");
    return r;
  }, WHILE_LOCKED);
}

async function samplesAt(at: Date): Promise<number> {
  const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM metric_samples WHERE at = $1", [at]);
  return n;
}

/** Inserts keys of `source`: `expired` past their expiry, `alive` ahead of it, `leased` of those holding a lease. */
async function insertKeys(source: string, n: { expired: number; alive: number; leased: number }): Promise<void> {
  await sql(
    `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, lease_expires_at, expires_at)
     SELECT $1, 'expired-' || i, 't', 'done', gen_random_uuid(), 'claimed', NULL, now() - interval '1 hour'
     FROM generate_series(1, $2) i
     UNION ALL
     SELECT $1, 'alive-' || i, 't', CASE WHEN i <= $4 THEN 'processing' ELSE 'done' END, gen_random_uuid(), 'claimed',
            CASE WHEN i <= $4 THEN now() + interval '10 minutes' END, now() + interval '1 day'
     FROM generate_series(1, $3) i`,
    [source, n.expired, n.alive, n.leased],
  );
}

describe("takeSample", () => {
  it("writes one sample per minute even when two samplers run at once", async () => {
    const at = await freeMinute(3);
    // Both can lose the lock to a third sampler (another test's server) for a moment: then try again.
    const results = await vi.waitFor(async () => {
      const both = await Promise.all([takeSample({ at }), takeSample({ at })]);
      if (both.every((r) => r.outcome === "locked")) throw new Error("the sampler lock is held elsewhere");
      return both;
    }, WHILE_LOCKED);
    const outcomes = results.map((r) => r.outcome).sort();
    expect(outcomes.filter((o) => o === "written")).toHaveLength(1);
    expect(["exists", "locked"]).toContain(outcomes.find((o) => o !== "written"));
    expect(results.every((r) => r.at.getTime() === at.getTime())).toBe(true);
    expect(await samplesAt(at)).toBe(1);

    // Later in the same minute, another instance finds the row and leaves it.
    expect((await sampleOnce({ at })).outcome).toBe("exists");
    expect(await samplesAt(at)).toBe(1);
  });

  it("stores the dedup table's figures: at least this file's expired, alive and in-flight keys", async () => {
    const source = await makeSource(86400, uniq("smp"));
    await insertKeys(source, { expired: 7, alive: 5, leased: 2 });
    const at = await freeMinute(4);
    expect((await sampleOnce({ at })).outcome).toBe("written");
    const [row] = await sql<Record<string, number | boolean>>("SELECT * FROM metric_samples WHERE at = $1", [at]);
    expect(row.expiry_backlog).toBeGreaterThanOrEqual(7);
    expect(row.backlog_capped).toBe(false);
    expect(row.alive_keys).toBeGreaterThanOrEqual(5);
    expect(row.in_flight).toBeGreaterThanOrEqual(2);
    expect(row.estimated_rows).toBeGreaterThanOrEqual((row.alive_keys as number) + (row.expiry_backlog as number));
    expect(row.table_bytes).toBeGreaterThan(0);
    expect(row.index_bytes).toBeGreaterThan(0);
    expect(row.index_bytes).toBeLessThan(row.table_bytes as number);
  });

  it("deletes samples older than 30 days and keeps younger ones", async () => {
    const old = await freeMinute(31);
    const young = await freeMinute(29);
    for (const at of [old, young]) {
      await sql(
        `INSERT INTO metric_samples (at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, in_flight, claims, duplicates)
         VALUES ($1, 1, 1, 1, 1, 0, 0, 0, 0)`,
        [at],
      );
    }
    expect((await sampleOnce({ at: await freeMinute(5) })).outcome).toBe("written");
    expect(await samplesAt(old)).toBe(0);
    expect(await samplesAt(young)).toBe(1);
  });
});

describe("measure", () => {
  it("counts the expiry backlog through the index up to its cap, and says when it stopped there", async () => {
    const source = await makeSource(86400, uniq("cap"));
    await insertKeys(source, { expired: 5, alive: 3, leased: 0 });
    const [{ at }] = await sql<{ at: Date }>("SELECT date_trunc('minute', now()) AS at");

    const full = await measure(database(), at);
    expect(full.expiryBacklog).toBeGreaterThanOrEqual(5);
    expect(full.backlogCapped).toBe(false);

    const capped = await measure(database(), at, { backlogCap: 3 });
    expect(capped.expiryBacklog).toBe(3);
    expect(capped.backlogCapped).toBe(true);
    expect(capped.exact).toBe(false);
    // Past a cap the rows are the planner's estimate, never below what was counted.
    expect(capped.estimatedRows).toBeGreaterThanOrEqual(capped.aliveKeys + capped.expiryBacklog);
  });

  it("estimates alive keys past their cap, never below the cap", async () => {
    const source = await makeSource(86400, uniq("alv"));
    await insertKeys(source, { expired: 0, alive: 4, leased: 0 });
    const [{ at }] = await sql<{ at: Date }>("SELECT date_trunc('minute', now()) AS at");
    const m = await measure(database(), at, { aliveCap: 2 });
    expect(m.exact).toBe(false);
    expect(m.aliveKeys).toBeGreaterThanOrEqual(2);
  });

  it("sums claims and duplicates of the minute before the sample, per source", async () => {
    const source = await makeSource(86400, uniq("cnt"));
    const [{ at }] = await sql<{ at: Date }>("SELECT date_trunc('minute', now()) - interval '7 days' AS at");
    await sql(
      `INSERT INTO claim_counts (bucket, source, claimed, duplicate, in_flight, payload_mismatch)
       VALUES ($1::timestamptz - interval '1 minute', $2, 7, 3, 1, 1),
              ($1::timestamptz - interval '2 minutes', $2, 100, 100, 0, 0),
              ($1::timestamptz, $2, 1000, 1000, 0, 0)`,
      [at, source],
    );
    const one = await measure(database(), at);
    expect(one.perSource[source]).toMatchObject({ claims: 7, duplicates: 3, aliveKeys: 0, expiryBacklog: 0, inFlight: 0 });
    expect(one.claims).toBeGreaterThanOrEqual(7);
    expect(one.duplicates).toBeGreaterThanOrEqual(3);
    const two = await measure(database(), at, { claimMinutes: 2 });
    expect(two.perSource[source]).toMatchObject({ claims: 107, duplicates: 103 });
  });

  it("counts each source's alive keys, backlog and keys in flight", async () => {
    const source = await makeSource(86400, uniq("psk"));
    const quiet = await makeSource(86400, uniq("psq"));
    await insertKeys(source, { expired: 2, alive: 5, leased: 1 });
    const [{ at }] = await sql<{ at: Date }>("SELECT date_trunc('minute', now()) AS at");
    const m = await measure(database(), at);
    // The shared database stays far below the exact-count limit (100,000 keys).
    expect(m.perSource[source]).toEqual({ claims: 0, duplicates: 0, aliveKeys: 5, expiryBacklog: 2, inFlight: 1, keysEstimated: false, keysAtRisk: 0, keysExpiringSoon: 0 });
    expect(m.perSource[quiet]).toEqual({ claims: 0, duplicates: 0, aliveKeys: 0, expiryBacklog: 0, inFlight: 0, keysEstimated: false, keysAtRisk: 0, keysExpiringSoon: 0 });
    // Past the counting caps the table is sampled (TABLESAMPLE) and the shares scaled to the totals: estimates.
    // A table "of one row" is sampled whole (100 %), so this file's few keys are surely in the sample.
    const est = await measureSourceKeys(database(), { estimatedRows: 1, aliveKeys: 1e9, expiryBacklog: 1e9, exact: false });
    expect(est.get(source)).toMatchObject({ keysEstimated: true, inFlight: 1 });
    expect(est.get(source)!.aliveKeys).toBeGreaterThan(0);
    expect(est.get(source)!.expiryBacklog).toBeGreaterThan(0);
    expect((await measure(database(), at, { aliveCap: 2 })).perSource[source].keysEstimated).toBe(true);
  });
});
