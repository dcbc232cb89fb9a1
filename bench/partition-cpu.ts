/**
 * PostgreSQL CPU per claim in partition mode: keyward_claim_partitioned() called with one event (the array
 * version, CLAIM_PARTITIONED_SQL) against keyward_claim_partitioned_one() (CLAIM_PARTITIONED_ONE_SQL), with
 * single-table mode's CLAIM_ONE_SQL beside them for scale. Not part of `npm run bench`; run it alone:
 *
 *   npx tsx --require ./bin/outside-next.cjs bench/partition-cpu.ts
 *
 * Databases of its own on BENCH_DATABASE_URL's server (default the local PostgreSQL), dropped at the end:
 * a single-table one, a partition-mode one whose longest TTL is 7 days (12 partitions with DEFAULT) and one
 * whose longest TTL is 90 days (95), each with a 7-day source beside the long one (as bench/partitions.ts).
 * Each slice drives one statement at 8 clients (a pool of 8 connections) for BENCH_CPU_SLICE_MS, either
 * fresh claims (new event ids) or duplicates (random keys of BENCH_CPU_DUP_KEYS claimed beforehand, then
 * ANALYZE, then every connection warmed: plans are made with statistics, see BENCH_CPU_ANALYZE). The
 * CPU is the sum of utime + stime (/proc/<pid>/stat) over the database's client backends
 * (pg_stat_activity), read before and after the slice, ÷ the claims made. Old and new run back to back in
 * every round, their order alternating; BENCH_CPU_ROUNDS rounds; medians are reported. On a shared machine
 * the claims per second move with the neighbours' load; the CPU per claim much less.
 */
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { migrate } from "@/lib/db/migrate";
import { CLAIM_ONE_SQL, CLAIM_PARTITIONED_ONE_SQL, CLAIM_PARTITIONED_SQL } from "@/lib/claims/claim";
import { drive, type Op } from "./drive";
import { median } from "./stats";

const knob = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const ROUNDS = knob("BENCH_CPU_ROUNDS", 5);
const SLICE_MS = knob("BENCH_CPU_SLICE_MS", 3000);
const DUP_KEYS = knob("BENCH_CPU_DUP_KEYS", 5000);
const CLIENTS = 8;
const DAY = 86400;
const LONG = "bench";
const SHORT = "bench-7d";
const TICK_MS = 1000 / 100; // CLK_TCK is 100 on Linux/x86-64 (getconf CLK_TCK)

type Db = { name: string; pool: pg.Pool };
type Version = "old" | "new" | "single";
type Kind = "fresh" | "dup";

async function main() {
  const cleanups: (() => Promise<unknown>)[] = [];
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  cleanups.push(() => admin.end());
  try {
    const open = async (suffix: string, ttlDays: number, mode: "single" | "partition"): Promise<Db> => {
      const name = `keyward_bench_cpu_${suffix}_${Date.now()}`;
      await admin.query(`CREATE DATABASE "${name}"`);
      cleanups.unshift(() => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
      const url = new URL(SERVER_URL);
      url.pathname = `/${name}`;
      await migrate(url.toString());
      const pool = new pg.Pool({ connectionString: url.toString(), max: CLIENTS, idleTimeoutMillis: 0 });
      pool.on("error", () => {}); // an idle connection ended by the DROP DATABASE … WITH (FORCE) at the end
      cleanups.unshift(() => pool.end());
      await pool.query(
        `INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds)
         VALUES ($1, $2, 0, 0, 0, $2), ($3, $4, 0, 0, 0, $4)`,
        [LONG, ttlDays * DAY, SHORT, 7 * DAY],
      );
      if (mode === "partition") await pool.query("SELECT keyward_partitions_enable(3)");
      return { name, pool };
    };
    const single = await open("single", 7, "single");
    const p7 = await open("p7", 7, "partition");
    const p90 = await open("p90", 90, "partition");
    const parts = async (db: Db) => (await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM keyward_dedup_partitions()")).rows[0].n;
    const n7 = await parts(p7);
    const n90 = await parts(p90);

    let seq = 0;
    const freshId = () => `evt_${process.pid}_${++seq}_${randomUUID().slice(0, 8)}`;
    const statement = (version: Version, source: string, eventId: string) => {
      if (version === "old") return { ...CLAIM_PARTITIONED_SQL, values: [source, [eventId], ["invoice.paid"], [null], [0], null, "bench", [null]] };
      const values = [source, eventId, "invoice.paid", null, 0, null, "bench", null];
      if (version === "new") return { ...CLAIM_PARTITIONED_ONE_SQL, values };
      return { ...CLAIM_ONE_SQL, values: [...values, randomUUID()] };
    };
    const claimOp = (db: Db, version: Version, source: string, kind: Kind): Op => async () => {
      const id = kind === "fresh" ? freshId() : `dup_${1 + Math.floor(Math.random() * DUP_KEYS)}`;
      const r = await db.pool.query<{ claimed_now: boolean; status: string }>(statement(version, source, id));
      if (r.rows.length !== 1) throw new Error(`bench: ${r.rows.length} rows`);
      if (r.rows[0].claimed_now !== (kind === "fresh")) throw new Error(`bench: a ${kind} claim answered claimed_now = ${r.rows[0].claimed_now}`);
    };

    type Combo = { label: string; db: Db; source: string; versions: Version[] };
    const combos: Combo[] = [
      { label: "single table (CLAIM_ONE_SQL)", db: single, source: LONG, versions: ["single"] },
      { label: `${n7} partitions, 7-day source`, db: p7, source: LONG, versions: ["old", "new"] },
      { label: `${n90} partitions, 90-day source`, db: p90, source: LONG, versions: ["old", "new"] },
      { label: `${n90} partitions, 7-day source`, db: p90, source: SHORT, versions: ["old", "new"] },
    ];
    // The keys the duplicates claim, made once by the array version in batches.
    for (const c of combos) {
      for (let i = 0; i < DUP_KEYS; i += 500) {
        const ids = Array.from({ length: Math.min(500, DUP_KEYS - i) }, (_, j) => `dup_${i + j + 1}`);
        await c.db.pool.query({ ...CLAIM_PARTITIONED_SQL, values: [c.source, ids, ids.map(() => "invoice.paid"), ids.map(() => null), ids.map(() => 0), null, "bench", ids.map(() => null)] });
      }
    }
    // Statistics, as autovacuum would gather them on a live database, before any connection plans the
    // statements (BENCH_CPU_ANALYZE=0 skips it: the array version's probe is then planned with
    // `event_id = ANY (…)` as a filter instead of an index condition, and slows down as the table grows).
    if (process.env.BENCH_CPU_ANALYZE !== "0") for (const db of [single, p7, p90]) await db.pool.query("ANALYZE dedup_keys");
    // Warm every connection (the first call on a connection plans the function's statements).
    for (const c of combos) for (const v of c.versions) for (const k of ["fresh", "dup"] as Kind[]) await drive(claimOp(c.db, v, c.source, k), CLIENTS, 500, 1);

    const pids = async (db: Db) =>
      (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'", [db.name])).rows.map((r) => r.pid);
    const ticks = (list: number[]) =>
      list.reduce((sum, pid) => {
        const f = readFileSync(`/proc/${pid}/stat`, "utf8");
        const after = f.slice(f.lastIndexOf(")") + 2).split(" "); // from field 3 (state) on
        return sum + Number(after[11]) + Number(after[12]); // utime (14), stime (15)
      }, 0);
    const backends = new Map<Db, number[]>();
    for (const db of [single, p7, p90]) {
      const list = await pids(db);
      if (list.length !== CLIENTS) throw new Error(`bench: ${db.name} has ${list.length} backends, expected ${CLIENTS}`);
      backends.set(db, list);
    }

    type Sample = { cpuMs: number; perSec: number };
    const samples = new Map<string, Sample[]>();
    const slice = async (c: Combo, v: Version, k: Kind) => {
      const list = backends.get(c.db)!;
      const t0 = ticks(list);
      const r = await drive(claimOp(c.db, v, c.source, k), CLIENTS, SLICE_MS, 1);
      const cpuMs = ((ticks(list) - t0) * TICK_MS) / r.ops;
      const now = await pids(c.db);
      if (now.length !== list.length || now.some((p) => !list.includes(p))) throw new Error("bench: the pool's backends changed");
      const key = `${c.label}|${v}|${k}`;
      samples.set(key, [...(samples.get(key) ?? []), { cpuMs, perSec: r.opsPerSec }]);
      console.log(`  ${c.label.padEnd(34)} ${v.padEnd(6)} ${k.padEnd(5)} ${cpuMs.toFixed(3)} ms CPU/claim  ${Math.round(r.opsPerSec)} claims/s`);
    };
    for (let round = 1; round <= ROUNDS; round++) {
      console.log(`round ${round}/${ROUNDS}`);
      for (const k of ["fresh", "dup"] as Kind[]) {
        for (const c of combos) {
          const order = round % 2 ? c.versions : [...c.versions].reverse();
          for (const v of order) await slice(c, v, k);
        }
      }
    }

    console.log(`\nmedians over ${ROUNDS} rounds of ${SLICE_MS} ms at ${CLIENTS} clients (PostgreSQL backend CPU per claim; claims/s)`);
    for (const k of ["fresh", "dup"] as Kind[]) {
      for (const c of combos) {
        const get = (v: Version) => samples.get(`${c.label}|${v}|${k}`)!;
        const line = c.versions.map((v) => `${v} ${median(get(v).map((s) => s.cpuMs)).toFixed(3)} ms, ${Math.round(median(get(v).map((s) => s.perSec)))}/s`);
        let ratio = "";
        if (c.versions.includes("new")) {
          const per = get("new").map((s, i) => s.cpuMs / get("old")[i].cpuMs);
          ratio = `  new/old CPU median ${median(per).toFixed(2)} [${per.map((x) => x.toFixed(2)).join(", ")}]`;
        }
        console.log(`${k.padEnd(5)} ${c.label.padEnd(34)} ${line.join(" | ")}${ratio}`);
      }
    }
  } finally {
    for (const f of cleanups) await f().catch((e) => console.error("cleanup:", e));
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
