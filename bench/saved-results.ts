/**
 * What issue 25 costs the claim path (single-table mode): the one-event claim statement as it was before
 * saved results (main's CLAIM_ONE_SQL text with the merge function of migration 20261204020000, both kept
 * in the benchmark's database under other names) against CLAIM_ONE_SQL now, for first claims and for
 * duplicates; beside them, duplicates of keys holding a saved result of 200 bytes (a webhook's usual
 * answer) and of 64 KiB (the default limit), answered with its bytes, and EXTEND_SQL (a heartbeat). Not part of `npm run bench`; run it alone:
 *
 *   npx tsx --require ./bin/outside-next.cjs bench/saved-results.ts
 *
 * A database of its own on BENCH_DATABASE_URL's server (default the local PostgreSQL), dropped at the end.
 * Each slice drives one statement at 8 clients for BENCH_RESULTS_SLICE_MS; the PostgreSQL CPU per call is
 * utime + stime of the pool's backends (/proc/<pid>/stat) over the slice ÷ the calls made, as in
 * bench/partition-cpu.ts. Before and after alternate their order every round; medians of
 * BENCH_RESULTS_ROUNDS rounds are reported, with the after/before ratio of each round's pair.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import pg from "pg";
import { migrate } from "@/lib/db/migrate";
import { CLAIM_ONE_SQL } from "@/lib/claims/claim";
import { EXTEND_SQL } from "@/lib/claims/settle";
import { drive, type Op } from "./drive";
import { median } from "./stats";

const knob = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const ROUNDS = knob("BENCH_RESULTS_ROUNDS", 5);
const SLICE_MS = knob("BENCH_RESULTS_SLICE_MS", 3000);
const KEYS = knob("BENCH_RESULTS_KEYS", 2000);
const CLIENTS = 8;
const TICK_MS = 1000 / 100; // CLK_TCK

/** keyward_merge_claim as migration 20261204020000 made it: no payload-hash rule. */
const MERGE_BEFORE = `
CREATE FUNCTION keyward_merge_claim_before(cur dedup_keys, inc dedup_keys) RETURNS dedup_keys
LANGUAGE plpgsql AS $$
BEGIN
    IF cur.expires_at <= now() THEN
        inc.claim_kind := 'reclaimed_after_expiry';
        RETURN inc;
    END IF;
    IF cur.payload_hash IS NOT NULL AND inc.payload_hash IS NOT NULL AND cur.payload_hash <> inc.payload_hash THEN
        RETURN cur;
    END IF;
    IF inc.attempt_id IS NOT NULL AND cur.attempt_id = inc.attempt_id
       AND NOT (cur.status = 'processing' AND cur.lease_expires_at <= now()) THEN
        RETURN cur;
    END IF;
    IF cur.status = 'processing' THEN
        IF cur.lease_expires_at <= now() THEN
            cur.claim_token := inc.claim_token;
            cur.attempt_id := inc.attempt_id;
            cur.claim_kind := 'lease_takeover';
            cur.status := inc.status;
            cur.lease_expires_at := inc.lease_expires_at;
            cur.expires_at := greatest(cur.expires_at, inc.lease_expires_at);
            cur.payload_hash := coalesce(cur.payload_hash, inc.payload_hash);
            IF inc.duplicate_count > 0 THEN
                cur.duplicate_count := cur.duplicate_count + inc.duplicate_count;
                cur.last_duplicate_at := now();
            END IF;
        END IF;
        RETURN cur;
    END IF;
    cur.duplicate_count := cur.duplicate_count + 1 + inc.duplicate_count;
    cur.last_duplicate_at := now();
    RETURN cur;
END $$`;

/** CLAIM_ONE_SQL before saved results (main at 08b0c9a), on the merge function above. */
const CLAIM_ONE_BEFORE = { name: "keyward_claim_one_before", text: `
WITH upserted AS (
  INSERT INTO dedup_keys AS k (source, event_id, event_type, payload_hash, status, claim_token, claim_kind,
                               lease_expires_at, expires_at, duplicate_count, last_duplicate_at, attempt_id)
  SELECT $1, $2, $3, $4,
         CASE WHEN $6::int IS NULL THEN 'done' ELSE 'processing' END,
         $9::uuid, 'claimed',
         now() + make_interval(secs => $6::int),
         greatest(now() + make_interval(secs => s.ttl_seconds), now() + make_interval(secs => $6::int)),
         $5::int, CASE WHEN $5::int > 0 THEN now() END, $8
  FROM sources s WHERE s.name = $1
  ON CONFLICT (source, event_id) DO UPDATE SET
    (event_type, payload_hash, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at,
     duplicate_count, last_duplicate_at, attempt_id) =
    (SELECT m.event_type, m.payload_hash, m.status, m.claim_token, m.claim_kind, m.lease_expires_at,
            m.received_at, m.expires_at, m.duplicate_count, m.last_duplicate_at, m.attempt_id
     FROM keyward_merge_claim_before(k, excluded) m)
  RETURNING k.*, k.claim_token = $9::uuid AS claimed_now
),
answered AS (
  SELECT u.*,
         NOT u.claimed_now AND $8::text IS NOT NULL AND u.attempt_id = $8
           AND NOT (u.payload_hash IS NOT NULL AND $4::text IS NOT NULL AND u.payload_hash <> $4) AS is_repeat
  FROM upserted u
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT a.source, a.event_id, a.event_type, a.claim_kind, $7,
         jsonb_strip_nulls(jsonb_build_object('expiresAt', a.expires_at, 'leaseExpiresAt', a.lease_expires_at,
                                              'payloadHash', a.payload_hash))
  FROM answered a WHERE a.claimed_now
)
SELECT event_id, status, claim_kind, claimed_now, is_repeat,
       CASE WHEN claimed_now OR is_repeat THEN claim_token END AS claim_token,
       payload_hash, lease_expires_at, received_at, expires_at, duplicate_count, attempt_id, now() AS db_now
FROM answered` };

type Case = "fresh" | "dup" | "dup 200 B result" | "dup 64 KiB result" | "extend";
type Version = "before" | "after";

async function main() {
  const cleanups: (() => Promise<unknown>)[] = [];
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  cleanups.push(() => admin.end());
  try {
    const name = `keyward_bench_results_${Date.now()}`;
    await admin.query(`CREATE DATABASE "${name}"`);
    cleanups.unshift(() => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    const url = new URL(SERVER_URL);
    url.pathname = `/${name}`;
    await migrate(url.toString());
    const pool = new pg.Pool({ connectionString: url.toString(), max: CLIENTS, idleTimeoutMillis: 0 });
    pool.on("error", () => {});
    cleanups.unshift(() => pool.end());
    await pool.query(MERGE_BEFORE);
    await pool.query(
      "INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds, save_results) VALUES ('bench', 604800, 0, 0, 0, 604800, true)",
    );

    // Keys for the duplicates (done, no result), keys holding a 200 B or a 64 KiB result, and leased keys to extend.
    const claimSql = (v: Version) => (v === "before" ? CLAIM_ONE_BEFORE : CLAIM_ONE_SQL);
    const params = (id: string, lease: number | null) => ["bench", id, "invoice.paid", null, 0, lease, "bench", null, randomUUID()];
    const tokens: string[] = [];
    for (let i = 1; i <= KEYS; i++) {
      await pool.query({ ...CLAIM_ONE_SQL, values: params(`dup_${i}`, null) });
      for (const [prefix, size] of [["res", 65536], ["small", 200]] as const) {
        await pool.query({ ...CLAIM_ONE_SQL, values: params(`${prefix}_${i}`, 60) });
        await pool.query(
          "UPDATE dedup_keys SET status = 'done', lease_expires_at = NULL, result_status = 200, result_headers = '{\"content-type\":\"application/json\"}', result_body = $2 WHERE source = 'bench' AND event_id = $1",
          [`${prefix}_${i}`, randomBytes(size)],
        );
      }
      const l = await pool.query<{ claim_token: string }>({ ...CLAIM_ONE_SQL, values: params(`lease_${i}`, 3600) });
      tokens.push(l.rows[0].claim_token);
    }
    await pool.query("ANALYZE dedup_keys");

    let seq = 0;
    const pick = () => 1 + Math.floor(Math.random() * KEYS);
    const op = (c: Case, v: Version): Op => async () => {
      if (c === "extend") {
        const i = pick();
        const r = await pool.query({ ...EXTEND_SQL, values: ["bench", `lease_${i}`, tokens[i - 1], 3600] });
        if (!r.rows[0]?.changed) throw new Error("bench: an extension changed nothing");
        return;
      }
      const id = c === "fresh" ? `evt_${process.pid}_${++seq}_${v}` : c === "dup" ? `dup_${pick()}` : c === "dup 200 B result" ? `small_${pick()}` : `res_${pick()}`;
      const r = await pool.query<{ claimed_now: boolean; result_body?: Buffer | null }>({ ...claimSql(v), values: params(id, null) });
      if (r.rows[0]?.claimed_now !== (c === "fresh")) throw new Error(`bench: a ${c} claim answered claimed_now = ${r.rows[0]?.claimed_now}`);
      if (c === "dup 64 KiB result" && v === "after" && r.rows[0].result_body?.byteLength !== 65536) throw new Error("bench: no saved result");
    };
    const cases: [Case, Version[]][] = [
      ["fresh", ["before", "after"]],
      ["dup", ["before", "after"]],
      ["dup 200 B result", ["after"]],
      ["dup 64 KiB result", ["after"]],
      ["extend", ["after"]],
    ];
    for (const [c, vs] of cases) for (const v of vs) await drive(op(c, v), CLIENTS, 500, 1); // plan on every connection

    const pids = (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'", [name])).rows.map(
      (r) => r.pid,
    );
    const ticks = () =>
      pids.reduce((sum, pid) => {
        const f = readFileSync(`/proc/${pid}/stat`, "utf8");
        const after = f.slice(f.lastIndexOf(")") + 2).split(" ");
        return sum + Number(after[11]) + Number(after[12]);
      }, 0);
    const samples = new Map<string, { cpuMs: number; perSec: number }[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      console.log(`round ${round}/${ROUNDS}`);
      for (const [c, vs] of cases) {
        for (const v of round % 2 ? vs : [...vs].reverse()) {
          const t0 = ticks();
          const r = await drive(op(c, v), CLIENTS, SLICE_MS, 1);
          const cpuMs = ((ticks() - t0) * TICK_MS) / r.ops;
          const key = `${c}|${v}`;
          samples.set(key, [...(samples.get(key) ?? []), { cpuMs, perSec: r.opsPerSec }]);
          console.log(`  ${c.padEnd(18)} ${v.padEnd(6)} ${cpuMs.toFixed(3)} ms CPU/call  ${Math.round(r.opsPerSec)}/s`);
        }
      }
    }
    console.log(`\nmedians over ${ROUNDS} rounds of ${SLICE_MS} ms at ${CLIENTS} clients (PostgreSQL backend CPU per call; calls/s)`);
    for (const [c, vs] of cases) {
      const get = (v: Version) => samples.get(`${c}|${v}`)!;
      const line = vs.map((v) => `${v} ${median(get(v).map((s) => s.cpuMs)).toFixed(3)} ms, ${Math.round(median(get(v).map((s) => s.perSec)))}/s`);
      let ratio = "";
      if (vs.length === 2) {
        const cpu = get("after").map((s, i) => s.cpuMs / get("before")[i].cpuMs);
        const rate = get("after").map((s, i) => s.perSec / get("before")[i].perSec);
        ratio = `  after/before: CPU ${median(cpu).toFixed(2)} [${cpu.map((x) => x.toFixed(2)).join(", ")}], calls/s ${median(rate).toFixed(2)}`;
      }
      console.log(`${c.padEnd(18)} ${line.join(" | ")}${ratio}`);
    }
  } finally {
    for (const f of cleanups) await f().catch((e) => console.error("cleanup:", e));
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
