/**
 * The partition-mode part of `npm run bench` (BENCH_PARTS=partitions), in bench databases of its own:
 *
 * 1. Dropping an expired day. A past day's partition is filled with BENCH_DROP_KEYS (1M) expired keys
 *    by generate_series, analysed and checkpointed; then the library's dropExpiredDedupPartitions()
 *    (what a prune run calls) is timed from call to answer. BENCH_DROP_REPEATS (3) times.
 * 2. Claim throughput, partition mode vs single-table mode: the same closed-loop workload of fresh
 *    claims (1 and 8 clients; single claims and batches of 100) against (a) a single-table database
 *    running CLAIM_SQL on raw pg (the baseline, the library's own statement), a partition-mode database
 *    whose longest TTL is 7 days (11 daily partitions + DEFAULT) and one whose longest TTL is 90 days
 *    (94 + DEFAULT), both running the library's partition-mode statement on raw pg (CLAIM_PARTITIONED_ONE_SQL
 *    for one event, CLAIM_PARTITIONED_SQL for a batch). Interleaved: (a), P7, (a), P90, (a)
 *    in every cycle, each slice divided by the mean of the (a) slices around it; the median is quoted.
 * 3. Claim latency with many live keys (single-table mode): a database holding BENCH_BIG_KEYS (10M)
 *    live keys (bulk-inserted with the indexes dropped, then re-indexed, vacuumed and analysed) against
 *    an empty one; fresh claims at 1 and 8 clients and duplicates of random existing keys at 8 clients,
 *    interleaved slice by slice. Filling stops early after BENCH_BIG_BUDGET_S (600) seconds; the report
 *    says how many keys it held.
 *
 * Every database is dropped at the end (also on failure).
 */
import { connectionDb } from "@/lib/db/transaction";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { migrate, MIGRATIONS_DIR } from "@/lib/db/migrate";
import { CLAIM_SQL } from "@/lib/claims/claim";
import { dropExpiredDedupPartitions } from "@/lib/retention/partitions";
import { drive, type Op } from "./drive";
import { claimParams, claimQuery, newEventId } from "./scenarios";
import { median, percentile, type RoundSample } from "./stats";

const knob = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};

const DROP_KEYS = knob("BENCH_DROP_KEYS", 1_000_000);
const DROP_REPEATS = knob("BENCH_DROP_REPEATS", 3);
const CYCLES = knob("BENCH_PARTITION_CYCLES", 5);
const SLICE_MS = knob("BENCH_PARTITION_SLICE_MS", 1000);
const BIG_KEYS = knob("BENCH_BIG_KEYS", 10_000_000);
const BIG_BUDGET_S = knob("BENCH_BIG_BUDGET_S", 600);
const SOURCE = "bench";
const SHORT = "bench-7d";
const DAY = 86400;

export type ThroughputRow = {
  label: string;
  clients: number;
  batch: number;
  eventsPerSec: number;
  ratio: number | null;
  ratios: number[];
  p50: number;
  p99: number;
};

export type LatencyRow = { label: string; clients: number; empty: Stats; big: Stats; p99Ratios: number[] };
type Stats = { perSec: number; p50: number; p99: number };

export type PartitionBenchResult = {
  drop: { keys: number; seconds: number[]; rowsReported: number[]; insertSeconds: number[] };
  partitionCounts: { p7: number; p90: number };
  throughput: ThroughputRow[];
  bigKeys: number;
  bigTargetKeys: number;
  bigFillSeconds: number;
  bigBytes: number;
  latency: LatencyRow[];
  seconds: number;
};

type Db = { name: string; url: string; pool: pg.Pool };

export async function benchPartitions(
  serverUrl: string,
  log: (msg: string) => void,
  cleanups: (() => Promise<unknown> | void)[],
): Promise<PartitionBenchResult> {
  const t0 = performance.now();
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  const open = async (suffix: string, ttlDays: number, mode: "single" | "partition"): Promise<Db> => {
    const name = `keyward_bench_${suffix}_${Date.now()}`;
    await admin(`CREATE DATABASE "${name}"`);
    cleanups.push(() => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    await migrate(url.toString());
    const pool = new pg.Pool({ connectionString: url.toString(), max: 10, application_name: "keyward-bench-partitions" });
    cleanups.push(() => pool.end());
    // SOURCE has the database's longest TTL; SHORT (7 days) claims beside it (its reach is 7 days + a margin).
    await pool.query(
      `INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds)
       VALUES ($1, $2, 0, 0, 0, $2), ($3, $4, 0, 0, 0, $4)`,
      [SOURCE, ttlDays * DAY, SHORT, 7 * DAY],
    );
    if (mode === "partition") await pool.query("SELECT keyward_partitions_enable(3)");
    return { name, url: url.toString(), pool };
  };

  // ---- 1. dropping a day of 1M expired keys
  const p7 = await open("p7", 7, "partition");
  const drop: PartitionBenchResult["drop"] = { keys: DROP_KEYS, seconds: [], rowsReported: [], insertSeconds: [] };
  for (let rep = 1; rep <= DROP_REPEATS; rep++) {
    const ti = performance.now();
    await p7.pool.query(`DO $$
      DECLARE d date := (now() AT TIME ZONE 'UTC')::date - ${rep};
      BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF dedup_keys FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 90)',
          keyward_dedup_partition_name(d), d::timestamp AT TIME ZONE 'UTC', (d + 1)::timestamp AT TIME ZONE 'UTC');
      END $$`);
    await p7.pool.query(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, received_at, expires_at)
       SELECT $1, 'old_' || $2::int || '_' || i, 'invoice.paid', 'done', gen_random_uuid(), 'claimed',
              d - interval '7 days', d + (i % 86400) * interval '1 second'
       FROM generate_series(1, $3::int) i,
            LATERAL (SELECT (((now() AT TIME ZONE 'UTC')::date - $2::int)::timestamp AT TIME ZONE 'UTC') AS d) x`,
      [SOURCE, rep, DROP_KEYS],
    );
    // Only the filled day (its reltuples is the drop's row count): an ANALYZE of the whole table would also
    // analyse the empty partitions ahead, which no install does (keyward_ensure_dedup_partitions resets them).
    await p7.pool.query(`ANALYZE ${await pastDay(p7.pool, rep)}`);
    await p7.pool.query("CHECKPOINT");
    drop.insertSeconds.push((performance.now() - ti) / 1000);
    const t = performance.now();
    const r = await dropExpiredDedupPartitions(connectionDb(p7.pool));
    drop.seconds.push((performance.now() - t) / 1000);
    drop.rowsReported.push(r.rows);
    if (r.dropped.length !== 1) throw new Error(`expected one dropped partition, got ${JSON.stringify(r)}`);
    log(`dropped a partition of ${r.rows} expired keys in ${drop.seconds.at(-1)!.toFixed(3)} s (filling it took ${drop.insertSeconds.at(-1)!.toFixed(0)} s)`);
  }

  // ---- 2. claim throughput, partition vs single
  const single = await open("single", 7, "single");
  const p90 = await open("p90", 90, "partition");
  // The same 7-day database with the claim functions as they were before migration 20261207000000 (plans
  // chosen by the statistics of the moment, cached per connection): the before of the after in one run.
  const p7before = await open("p7before", 7, "partition");
  await p7before.pool.query(claimPlansBefore());
  const count = async (db: Db) =>
    (await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM keyward_dedup_partitions()")).rows[0].n;
  const partitionCounts = { p7: await count(p7), p90: await count(p90) };
  // (a) runs the statement the library sends in single-table mode (CLAIM_ONE_SQL for one event).
  // Each database runs the statement the library sends in its mode (one event: CLAIM_ONE_SQL or
  // CLAIM_PARTITIONED_ONE_SQL; a batch: CLAIM_SQL or CLAIM_PARTITIONED_SQL).
  const claimOp = (db: Db, mode: "single" | "partition", batch: number, source = SOURCE): Op => async () => {
    const ids = Array.from({ length: batch }, newEventId);
    const q = claimQuery(source, ids, false, mode);
    const r = await db.pool.query<{ claimed_now: boolean }>(q);
    if (r.rows.length !== batch || !r.rows.every((x) => x.claimed_now)) throw new Error("bench: a fresh claim was not claimed");
  };
  const scenarios = [
    { label: "(a) single table, the library's statement", op: (b: number) => claimOp(single, "single", b) },
    { label: `partition mode, 7-day TTL (${partitionCounts.p7} partitions)`, op: (b: number) => claimOp(p7, "partition", b) },
    { label: `${BEFORE_LABEL} (${partitionCounts.p7} partitions)`, op: (b: number) => claimOp(p7before, "partition", b) },
    { label: `partition mode, 90-day TTL (${partitionCounts.p90} partitions)`, op: (b: number) => claimOp(p90, "partition", b) },
    {
      label: `partition mode, ${partitionCounts.p90} partitions, a 7-day source's claims`,
      op: (b: number) => claimOp(p90, "partition", b, SHORT),
    },
  ];
  const shapes = [
    { clients: 1, batch: 1 },
    { clients: 8, batch: 1 },
    { clients: 8, batch: 100 },
  ];
  // Warm every connection of every pool (the first call on a connection plans the statements).
  for (const s of scenarios) for (const shape of shapes) await drive(s.op(shape.batch), 10, 300, shape.batch);
  const throughput: ThroughputRow[] = [];
  const samples = new Map<string, { s: RoundSample[]; ratios: number[] }>();
  const key = (i: number, sh: { clients: number; batch: number }) => `${i}:${sh.clients}:${sh.batch}`;
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    for (const shape of shapes) {
      const run = (i: number) => drive(scenarios[i].op(shape.batch), shape.clients, SLICE_MS, shape.batch);
      let before = await run(0);
      push(samples, key(0, shape), before, null);
      const others = scenarios.map((_, i) => i).slice(1);
      const order = others.slice(cycle % others.length).concat(others.slice(0, cycle % others.length));
      for (const i of order) {
        const x = await run(i);
        const after = await run(0);
        push(samples, key(0, shape), after, null);
        push(samples, key(i, shape), x, x.opsPerSec / ((before.opsPerSec + after.opsPerSec) / 2));
        before = after;
      }
    }
    log(`partition throughput: cycle ${cycle + 1}/${CYCLES} done`);
  }
  for (const shape of shapes) {
    scenarios.forEach((s, i) => {
      const m = samples.get(key(i, shape))!;
      const lat = m.s.flatMap((x) => x.latenciesMs).sort((a, b) => a - b);
      throughput.push({
        label: s.label,
        ...shape,
        eventsPerSec: median(m.s.map((x) => x.opsPerSec)) * shape.batch,
        ratio: i === 0 ? null : median(m.ratios),
        ratios: m.ratios,
        p50: percentile(lat, 50),
        p99: percentile(lat, 99),
      });
    });
  }

  // ---- 3. claim latency with many live keys vs an empty table (single-table mode)
  const empty = single;
  await empty.pool.query("TRUNCATE dedup_keys");
  const big = await open("big", 7, "single");
  const tf = performance.now();
  await big.pool.query("ALTER TABLE dedup_keys DROP CONSTRAINT dedup_keys_pkey");
  await big.pool.query("DROP INDEX dedup_keys_expires_at_idx, dedup_keys_in_flight_idx");
  const CHUNK = 1_000_000;
  let bigKeys = 0;
  while (bigKeys < BIG_KEYS && (performance.now() - tf) / 1000 < BIG_BUDGET_S * 0.6) {
    const n = Math.min(CHUNK, BIG_KEYS - bigKeys);
    // Live keys expiring between 1 and 7 days from now (none expires during the run); event ids shaped
    // like the claims' (evt_ + 32 hex characters).
    await big.pool.query(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, received_at, expires_at)
       SELECT $1, 'evt_' || md5(i::text), 'invoice.paid', 'done', gen_random_uuid(), 'claimed',
              now() - (i % 518400) * interval '1 second', now() + interval '1 day' + (518400 - i % 518400) * interval '1 second'
       FROM generate_series($2::int + 1, $2::int + $3::int) i`,
      [SOURCE, bigKeys, n],
    );
    bigKeys += n;
    log(`big table: ${bigKeys.toLocaleString("en-US")} keys (${((performance.now() - tf) / 1000).toFixed(0)} s)`);
  }
  const c = await big.pool.connect();
  try {
    await c.query("SET maintenance_work_mem = '1GB'");
    await c.query(`ALTER TABLE dedup_keys ADD CONSTRAINT "dedup_keys_pkey" PRIMARY KEY ("source", "event_id")`);
    await c.query(`CREATE INDEX "dedup_keys_expires_at_idx" ON "dedup_keys"("expires_at")`);
    await c.query(`CREATE INDEX "dedup_keys_in_flight_idx" ON "dedup_keys" ("lease_expires_at") WHERE "status" = 'processing'`);
    await c.query("VACUUM (ANALYZE) dedup_keys");
    await c.query("CHECKPOINT");
  } finally {
    c.release();
  }
  const bigFillSeconds = (performance.now() - tf) / 1000;
  const bigBytes = (await big.pool.query<{ b: string }>("SELECT pg_total_relation_size('dedup_keys')::text AS b")).rows[0].b;
  log(`big table ready: ${bigKeys.toLocaleString("en-US")} keys, ${(Number(bigBytes) / 2 ** 30).toFixed(2)} GiB, ${bigFillSeconds.toFixed(0)} s`);

  const dupOp = (db: Db, maxI: () => number): Op => async () => {
    const i = 1 + Math.floor(Math.random() * maxI());
    const r = await db.pool.query<{ claimed_now: boolean }>({ ...CLAIM_SQL, values: claimParams(SOURCE, [`evt_${md5Hex(i)}`]) });
    if (r.rows.length !== 1 || r.rows[0].claimed_now) throw new Error("bench: a duplicate was claimed");
  };
  // The empty table gets 1000 keys of the same shape so that its duplicates have something to find.
  await empty.pool.query(
    `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
     SELECT $1, 'evt_' || md5(i::text), 'invoice.paid', 'done', gen_random_uuid(), 'claimed', now() + interval '7 days'
     FROM generate_series(1, 1000) i`,
    [SOURCE],
  );
  const latencyCases = [
    { label: "fresh claims", clients: 1, op: (db: Db) => claimOp(db, "single", 1) },
    { label: "fresh claims", clients: 8, op: (db: Db) => claimOp(db, "single", 1) },
    { label: "duplicates of random existing keys", clients: 8, op: (db: Db) => dupOp(db, () => (db === big ? bigKeys : 1000)) },
  ];
  for (const lc of latencyCases) for (const db of [empty, big]) await drive(lc.op(db), 10, 300, 1);
  const lat = latencyCases.map(() => ({ empty: [] as RoundSample[], big: [] as RoundSample[], p99Ratios: [] as number[] }));
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    for (const [i, lc] of latencyCases.entries()) {
      const order = cycle % 2 ? [big, empty] : [empty, big];
      const got: Record<string, RoundSample> = {};
      for (const db of order) got[db === big ? "big" : "empty"] = await drive(lc.op(db), lc.clients, SLICE_MS, 1);
      lat[i].empty.push(got.empty);
      lat[i].big.push(got.big);
      const p99 = (s: RoundSample) => percentile([...s.latenciesMs].sort((a, b) => a - b), 99);
      lat[i].p99Ratios.push(p99(got.big) / p99(got.empty));
    }
    log(`big-table latency: cycle ${cycle + 1}/${CYCLES} done`);
  }
  const stats = (s: RoundSample[]): Stats => {
    const all = s.flatMap((x) => x.latenciesMs).sort((a, b) => a - b);
    return { perSec: median(s.map((x) => x.opsPerSec)), p50: percentile(all, 50), p99: percentile(all, 99) };
  };
  const latency = latencyCases.map((lc, i) => ({
    label: lc.label,
    clients: lc.clients,
    empty: stats(lat[i].empty),
    big: stats(lat[i].big),
    p99Ratios: lat[i].p99Ratios,
  }));

  return {
    drop,
    partitionCounts,
    throughput,
    bigKeys,
    bigTargetKeys: BIG_KEYS,
    bigFillSeconds,
    bigBytes: Number(bigBytes),
    latency,
    seconds: Math.round((performance.now() - t0) / 1000),
  };
}

const BEFORE_LABEL = "partition mode, 7-day TTL, the claim plans before issue 27";

/** The past day's partition that part 1 fills in repetition `rep`. */
async function pastDay(pool: pg.Pool, rep: number): Promise<string> {
  const { rows } = await pool.query<{ p: string }>("SELECT keyward_dedup_partition_name((now() AT TIME ZONE 'UTC')::date - $1::int) AS p", [rep]);
  return rows[0].p;
}

/**
 * The partition-mode claim functions as migration 20261206100000_claim_results made them (the array probe
 * `event_id = ANY (…)`, no enable_seqscan setting), read from that migration so that the "before" is exactly
 * the code that ran.
 */
function claimPlansBefore(): string {
  const file = path.join(MIGRATIONS_DIR, "20261206100000_claim_results", "migration.sql");
  const text = readFileSync(file, "utf8");
  const start = text.indexOf("CREATE FUNCTION keyward_claim_partitioned(");
  const end = text.indexOf("DROP FUNCTION keyward_claim_partitioned_one(", start);
  if (start < 0 || end < 0) throw new Error(`bench: the array claim function is not where expected in ${file}`);
  return `${text.slice(start, end).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")}
ALTER FUNCTION keyward_claim_partitioned_one(text, text, text, text, integer, integer, text, text) RESET enable_seqscan;`;
}

function push(m: Map<string, { s: RoundSample[]; ratios: number[] }>, k: string, s: RoundSample, ratio: number | null) {
  const e = m.get(k) ?? { s: [], ratios: [] };
  e.s.push(s);
  if (ratio !== null) e.ratios.push(ratio);
  m.set(k, e);
}

const md5Hex = (i: number) => createHash("md5").update(String(i)).digest("hex");

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => n.toFixed(2);
const x = (n: number) => `${n.toFixed(2)}×`;

export const PARTITIONS_START = "<!-- partitions: written by bench/partitions.ts -->";
export const PARTITIONS_END = "<!-- /partitions -->";

export function partitionsText(r: PartitionBenchResult): string {
  const lines = [
    `drop of a ${int(r.drop.keys)}-key expired partition: ${r.drop.seconds.map((s) => `${s.toFixed(3)} s`).join(", ")}`,
    ...r.throughput.map(
      (t) =>
        `${t.label.padEnd(48)} ${t.clients} client(s) × batch ${String(t.batch).padEnd(3)} ${int(t.eventsPerSec).padStart(7)} events/s  ` +
        `${t.ratio === null ? "baseline" : x(t.ratio)}  p50 ${ms(t.p50)} p99 ${ms(t.p99)} ms`,
    ),
    `big table: ${int(r.bigKeys)} keys (${(r.bigBytes / 2 ** 30).toFixed(2)} GiB), filled in ${r.bigFillSeconds.toFixed(0)} s`,
    ...r.latency.map(
      (l) =>
        `${l.label} at ${l.clients}: empty p50 ${ms(l.empty.p50)} p99 ${ms(l.empty.p99)} (${int(l.empty.perSec)}/s); ` +
        `big p50 ${ms(l.big.p50)} p99 ${ms(l.big.p99)} (${int(l.big.perSec)}/s); p99 ratio median ${x(median(l.p99Ratios))}`,
    ),
  ];
  return lines.join("\n");
}

/** Before and after migration 20261207000000, batches of 100: the first two cycles and the median. */
function beforeAfter(r: PartitionBenchResult): string {
  const row = (label: (l: string) => boolean) => r.throughput.find((t) => t.clients === 8 && t.batch === 100 && label(t.label));
  const before = row((l) => l.startsWith(BEFORE_LABEL));
  const after = row((l) => l.startsWith("partition mode, 7-day TTL (") );
  if (!before || !after) return "";
  const first2 = (t: ThroughputRow) => t.ratios.slice(0, 2).map((v) => v.toFixed(2)).join(", ");
  return `Batches of 100 at 8 clients, before → after: first two cycles ${first2(before)} → ${first2(after)}, ` +
    `median ${x(before.ratio ?? NaN)} → ${x(after.ratio ?? NaN)}; after ÷ before per cycle ` +
    `[${after.ratios.map((v, i) => (v / before.ratios[i]).toFixed(2)).join(", ")}].`;
}

/** The issue's aims for partition mode, met or not, from the throughput rows. */
function aims(r: PartitionBenchResult): string {
  const ratio = (clients: number, batch: number, label: RegExp) =>
    r.throughput.find((t) => t.clients === clients && t.batch === batch && label.test(t.label))?.ratio ?? NaN;
  const rows: [string, number, number][] = [
    ["8 clients, 12 partitions (7-day TTL) ≥ 0.8× single table", ratio(8, 1, /7-day TTL/), 0.8],
    ["8 clients, 95 partitions (90-day TTL) ≥ 0.6×", ratio(8, 1, /90-day TTL/), 0.6],
    ["batches of 100, 95 partitions ≥ 0.6×", ratio(8, 100, /90-day TTL/), 0.6],
  ];
  return rows.map(([text, v, aim]) => `- ${v >= aim ? "✅ met" : "❌ not met"}: ${text}: ${v.toFixed(2)}×`).join("\n");
}

export function partitionsMarkdown(r: PartitionBenchResult, when: string): string {
  const dropMedian = median(r.drop.seconds);
  const shapeName = (t: ThroughputRow) => `${t.clients} client${t.clients > 1 ? "s" : ""}, ${t.batch === 1 ? "single claims" : `batches of ${t.batch}`}`;
  const tput = [
    "| shape | scenario | events/s | vs (a) [each cycle] | p50 ms | p99 ms |",
    "| --- | --- | ---: | --- | ---: | ---: |",
    ...r.throughput.map(
      (t) =>
        `| ${shapeName(t)} | ${t.ratio === null ? `**${t.label}**` : t.label} | ${int(t.eventsPerSec)} | ${
          t.ratio === null ? "1.00× (baseline)" : `${x(t.ratio)} [${t.ratios.map((v) => v.toFixed(2)).join(", ")}]`
        } | ${ms(t.p50)} | ${ms(t.p99)} |`,
    ),
  ].join("\n");
  const latency = [
    `| claims (single-table mode) | empty: /s | p50 ms | p99 ms | ${int(r.bigKeys)} keys: /s | p50 ms | p99 ms | p99 ratio (median of cycles) |`,
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ...r.latency.map(
      (l) =>
        `| ${l.label}, ${l.clients} client${l.clients > 1 ? "s" : ""} | ${int(l.empty.perSec)} | ${ms(l.empty.p50)} | ${ms(l.empty.p99)} | ${int(
          l.big.perSec,
        )} | ${ms(l.big.p50)} | ${ms(l.big.p99)} | ${x(median(l.p99Ratios))} [${l.p99Ratios.map((v) => v.toFixed(2)).join(", ")}] |`,
    ),
  ].join("\n");
  const partial =
    r.bigKeys < r.bigTargetKeys
      ? ` (the target was ${int(r.bigTargetKeys)}; filling stopped at its time budget on this shared 2-core machine)`
      : "";
  return `${PARTITIONS_START}
## Partition mode

Measured ${when}; this part took ${r.seconds} s (\`BENCH_PARTS=partitions npm run bench\` reruns only it).

### Dropping an expired day

A past day's partition filled with ${int(r.drop.keys)} expired keys (generate_series, then ANALYZE and
CHECKPOINT), dropped through \`dropExpiredDedupPartitions()\` (what every prune run in partition mode
calls: the catalog query for ended partitions, then \`keyward_drop_dedup_partition\`: re-check of the
bound, the reltuples estimate, \`DROP TABLE\` under a 500 ms lock_timeout), timed from call to answer:
**${r.drop.seconds.map((s) => `${s.toFixed(3)} s`).join(", ")}** (median ${dropMedian.toFixed(3)} s; rows reported
${r.drop.rowsReported.map(int).join(", ")}). Aim < 1 s: ${dropMedian < 1 ? "✅ met" : "❌ not met"}. For scale: at the batch pruner's
rates in the Pruning section (its bare statement loop, and a run at the default batch size and pause) the
same ${int(r.drop.keys)} keys take seconds to tens of seconds, and their space returns only through vacuum; a
dropped partition's space returns at once.

### Claim throughput: partition mode vs single-table mode

Fresh claims (every claim a first claim) on raw \`pg\`, pools of 10 connections; each database has a source
with its longest TTL and a 7-day one. (a) is a single-table database running the library's statement
(\`CLAIM_ONE_SQL\` for one event, \`CLAIM_SQL\` for a batch), the others partition-mode databases running
\`CLAIM_PARTITIONED_ONE_SQL\` (\`keyward_claim_partitioned_one()\`) for one event and \`CLAIM_PARTITIONED_SQL\`
(\`keyward_claim_partitioned()\`) for a batch, with as many daily partitions as a longest TTL
of 7 or 90 days needs (today + TTL + 3 days, a DEFAULT partition; the first 7-day one also went through part 1).
A claim probes the partitions of its source's reach (docs/architecture.md, "Claim cost model"): the whole
table for the 90-day source, about 9 partitions for a 7-day source, in either database. ${CYCLES} cycles of
${SLICE_MS} ms slices, interleaved (a), P, (a), P′, (a), …; each ratio is a slice ÷ the mean of the (a) slices
right around it, the median over cycles is quoted and every cycle's ratio is listed. Latency percentiles
pool all requests of a scenario.

"${BEFORE_LABEL}" is a third 7-day database whose claim functions are the ones of migration
20261206100000 (read from it), all else equal: its plans, made per connection by the warm-up while every
partition was empty, kept scanning the partition that filled (an index scan on the source with the ids as a
filter) until autovacuum analysed it. Since migration 20261207000000 every read of dedup_keys in a claim is a
lookup by key whatever the statistics (docs/architecture.md, "Partition mode: plans that cannot go stale";
test/partitions/plans.db.test.ts). ${beforeAfter(r)}

${tput}

${aims(r)}

### Claim latency with ${int(r.bigKeys)} live keys vs an empty table

Single-table mode. One database held ${int(r.bigKeys)} live keys${partial}, ${(r.bigBytes / 2 ** 30).toFixed(2)} GiB
with indexes (bulk insert with the indexes dropped, then the same indexes re-created, VACUUM ANALYZE,
CHECKPOINT: ${r.bigFillSeconds.toFixed(0)} s in all); the other was empty (1000 keys, for the duplicates to find). ${CYCLES} cycles
of ${SLICE_MS} ms slices, the two databases alternating slice by slice; p50/p99 pool all requests; the ratio is the
big table's p99 ÷ the empty one's, per cycle. This machine has enough memory for the whole table to stay
in the OS page cache, so this measures the deeper B-tree and the wider working set, not disk reads.

${latency}
${PARTITIONS_END}
`;
}
