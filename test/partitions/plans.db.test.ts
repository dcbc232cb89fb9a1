/**
 * Partition mode's claim plans do not depend on the partitions' statistics (issue 27; migration
 * 20261207000000_partition_claim_plans). Both claim functions run a plan made once per connection; a plan made
 * while the partition that later fills was empty used to keep scanning it (a sequential scan, or an index scan
 * on the source alone with the ids as a filter) until autovacuum analysed it: 0.12-0.20x in the bench's first
 * cycles. Here a connection plans every path of both functions while the partitions are empty, a partition is
 * then filled with 50,000 keys without being analysed (autovacuum off for it), and PostgreSQL's own
 * auto_explain shows the plans the next calls run: every read of that partition must look its key up by
 * (source, event_id). The same once the partitions were analysed while still empty, after the next
 * keyward_ensure_dedup_partitions (every prune run) has reset them. In a database of this file's own.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_PARTITIONED_ONE_SQL, CLAIM_PARTITIONED_SQL, claimStatementParams } from "@/lib/claims/claim";
import { ensureDedupPartitions } from "@/lib/retention/partitions";
import { makeSource, sql, uniq, fileDatabaseUrl } from "@/test/setup/db";

const DAY = 86400;
const FILLED = 50_000;

let c: pg.Client;
let notices: string[] = [];
beforeAll(async () => {
  await sql("SELECT keyward_partitions_enable(3)");
});
afterAll(async () => {
  await c?.end();
});

const params = (source: string, ids: string[]) =>
  claimStatementParams(source, ids.map((eventId) => ({ first: { eventId, eventType: "t" }, repeats: 0 })), null, "plans-test");

type Answer = { event_id: string; claimed_now: boolean };
async function claim(source: string, ids: string[]): Promise<Answer[]> {
  if (ids.length === 1) {
    const p = params(source, ids);
    return (await c.query<Answer>({ ...CLAIM_PARTITIONED_ONE_SQL, values: [p[0], ids[0], "t", null, 0, null, "plans-test", null] })).rows;
  }
  return (await c.query<Answer>({ ...CLAIM_PARTITIONED_SQL, values: params(source, ids) })).rows;
}

/** The partition a key claimed now by a source of this TTL lands in. */
async function partitionOf(ttlSeconds: number): Promise<string> {
  const [{ name }] = await sql<{ name: string }>(
    "SELECT name FROM keyward_dedup_partitions() WHERE now() + make_interval(secs => $1) >= range_start AND now() + make_interval(secs => $1) < range_end",
    [ttlSeconds],
  );
  return name;
}

/** Every claim path planned once on `c` (a first claim and a duplicate, one event and a batch). */
async function planEveryPath(source: string) {
  const [a, b] = [uniq("warm"), uniq("warm")];
  await claim(source, [a, b]);
  await claim(source, [a, b, uniq("warm")]);
  await claim(source, [uniq("warm")]);
  await claim(source, [a]);
}

/** FILLED keys of `source` in `part`, 100 to an expiry (as batches store them), not analysed. */
async function fill(source: string, part: string, ttlSeconds: number) {
  const bulk = new pg.Client({ connectionString: fileDatabaseUrl() }); // no statement timeout: a bulk insert on a busy machine
  await bulk.connect();
  try {
    await bulk.query(
    `INSERT INTO ${part} (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
     SELECT $1, 'bulk-' || i, 't', 'done', gen_random_uuid(), 'claimed', now() + make_interval(secs => $2) + (i / 100) * interval '1 ms'
     FROM generate_series(1, $3::int) i`,
      [source, ttlSeconds, FILLED],
    );
  } finally {
    await bulk.end();
  }
}

/** The plans of the statements one call runs (auto_explain, nested statements), as text. */
async function plansOf(run: () => Promise<unknown>): Promise<string> {
  notices = [];
  await c.query("SET auto_explain.log_min_duration = 0");
  try {
    await run();
  } finally {
    await c.query("SET auto_explain.log_min_duration = -1");
  }
  return notices.join("\n");
}

/** Each scan of `part` in the plans, with the conditions printed under it. */
function scansOf(plans: string, part: string): { node: string; conds: string }[] {
  const lines = plans.split("\n");
  const out: { node: string; conds: string }[] = [];
  lines.forEach((line, i) => {
    if (!/Scan/.test(line) || !line.includes(` on ${part} `)) return;
    const depth = line.search(/\S/);
    const conds: string[] = [];
    for (let j = i + 1; j < lines.length && lines[j].search(/\S/) > depth; j++) conds.push(lines[j].trim());
    out.push({ node: line.trim().replace(/\s+\(cost=.*$/, ""), conds: conds.join(" | ") });
  });
  return out;
}

function expectKeyLookups(plans: string, part: string) {
  const scans = scansOf(plans, part);
  expect(scans.length).toBeGreaterThan(0);
  for (const s of scans) {
    expect(s.node, `${s.node}: ${s.conds}`).not.toMatch(/Seq Scan/);
    // The key's columns are index conditions (of the scan, or of the bitmap index scan under it), not a filter;
    // or, for the write of a key already found, its exact stored expiry (the keys one batch claimed share one:
    // at most a batch's keys, however full the partition).
    expect(s.conds, `${s.node}: ${s.conds}`).toMatch(
      /(Index Cond|Recheck Cond): (\(\(source = \$\d+\) AND \(event_id = |\(expires_at = \$\d+\))/,
    );
  }
}

async function openPlanner() {
  await c?.end();
  c = new pg.Client({ connectionString: fileDatabaseUrl() });
  await c.connect();
  c.on("notice", (n) => notices.push(n.message ?? ""));
  await c.query("LOAD 'auto_explain'");
  await c.query(
    "SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = notice; SET auto_explain.log_min_duration = -1; SET client_min_messages = notice",
  );
}

async function checkEveryPath(source: string, part: string) {
  const fresh = Array.from({ length: 100 }, () => uniq("fresh"));
  const plans = {
    "a batch of first claims": await plansOf(async () => {
      const rows = await claim(source, fresh);
      expect(rows.filter((r) => r.claimed_now)).toHaveLength(100);
    }),
    "one first claim": await plansOf(async () => expect((await claim(source, [uniq("fresh")]))[0].claimed_now).toBe(true)),
    "a batch with duplicates": await plansOf(async () => {
      const other = uniq("fresh");
      const rows = await claim(source, ["bulk-17", "bulk-45000", fresh[0], other]);
      expect(Object.fromEntries(rows.map((r) => [r.event_id, r.claimed_now]))).toEqual({
        "bulk-17": false,
        "bulk-45000": false,
        [fresh[0]]: false,
        [other]: true,
      });
    }),
    "one duplicate": await plansOf(async () => expect((await claim(source, ["bulk-49999"]))[0].claimed_now).toBe(false)),
  };
  for (const [name, p] of Object.entries(plans)) {
    try {
      expectKeyLookups(p, part);
    } catch (err) {
      throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
    }
  }
  const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dedup_keys WHERE source = $1 AND event_id IN ('bulk-17', 'bulk-45000', 'bulk-49999')", [source]);
  expect(n).toBe(3);
}

describe("partition mode: claim plans made on empty partitions stay key lookups once they fill", () => {
  it("partitions never analysed (as keyward_ensure_dedup_partitions creates them)", async () => {
    const ttl = 7 * DAY;
    const source = await makeSource(ttl);
    await ensureDedupPartitions(); // the days this TTL reaches
    const part = await partitionOf(ttl);
    await sql(`ALTER TABLE ${part} SET (autovacuum_enabled = false)`); // no ANALYZE may remake the plans meanwhile
    const [{ reltuples }] = await sql<{ reltuples: number }>("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", [part]);
    expect(reltuples).toBe(-1);
    await openPlanner();
    await planEveryPath(source);
    await fill(source, part, ttl);
    await checkEveryPath(source, part);
  }, 120_000);

  it("partitions analysed while empty are reset by the next ensure pass, and planned as lookups", async () => {
    const ttl = 8 * DAY; // a partition of its own, empty until now
    const source = await makeSource(ttl);
    await ensureDedupPartitions();
    const part = await partitionOf(ttl);
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${part}`))[0].n).toBe(0);
    await sql(`ALTER TABLE ${part} SET (autovacuum_enabled = false)`);
    await sql("ANALYZE dedup_keys");
    const stats = async () => (await sql<{ reltuples: number }>("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", [part]))[0].reltuples;
    expect(await stats()).toBe(0);
    await ensureDedupPartitions();
    expect(await stats()).toBe(-1);
    // A partition that holds keys is never truncated: the 7-day one above, analysed now, keeps them.
    const full = await partitionOf(7 * DAY);
    await sql(`ANALYZE ${full}`);
    const before = (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${full}`))[0].n;
    await ensureDedupPartitions();
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${full}`))[0].n).toBe(before);

    await openPlanner();
    await planEveryPath(source);
    await fill(source, part, ttl);
    await checkEveryPath(source, part);
  }, 120_000);
});
