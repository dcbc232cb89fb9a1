/**
 * The pruning part of `npm run bench`:
 *
 * 1. Throughput. A backlog of expired keys (BENCH_PRUNE_BACKLOG, 200k) is pruned by (a) a raw pg loop
 *    running PRUNE_BATCH_SQL, the library's exact statement, at the same batch size, until a batch comes
 *    back short; by (b) the library's `pruneExpiredKeys` with no pause (its lease, run record
 *    and all); and by two other statement shapes for the same batch, to show why the library uses the
 *    one it does. The backlog is refilled before every run (VACUUM first, CHECKPOINT after, so every run
 *    starts from the same state); runs go (a), X, (a), Y, (a) …, and each run of (b) or a shape is
 *    divided by the mean of the (a) runs right before and after it; (b) is quoted as the median over
 *    BENCH_PRUNE_CYCLES runs, the control ((a) on a connection of its own) over two, the shapes (far
 *    slower) once.
 * 2. Claims during a prune. Library single claims (claimEvent, 8 clients) while idle, then while the
 *    library prunes the backlog with its default settings (batch, pause), then idle again; p50/p99 of the
 *    claims during the prune ÷ those of the idle slices around it.
 *
 * Knobs: BENCH_PRUNE_BACKLOG (200000), BENCH_PRUNE_CYCLES (8: runs of (b)), BENCH_PRUNE_BATCH (5000).
 */
import pg from "pg";
import { closeDb, pool as libPool } from "@/lib/db/client";
import { PRUNE_BATCH_SQL, pruneExpiredKeys } from "@/lib/retention/prune";
import { claimEvent } from "@/lib/claims/claim";
import { loadEnv } from "@/lib/config/env";
import { drive } from "./drive";
import { newEventId } from "./scenarios";
import { median, percentile } from "./stats";
import type { Aim } from "./report";

const knob = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};

const SOURCE = "prune-bench";
const CLAIM_CLIENTS = 8;
const CLAIM_CYCLES = 3;
const CLAIM_SLICE_MS = 1500;

/** Other shapes of the same batch, measured against PRUNE_BATCH_SQL. */
const SHAPES = {
  join: `WITH doomed AS (SELECT ctid FROM dedup_keys WHERE expires_at < now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
DELETE FROM dedup_keys d USING doomed WHERE d.ctid = doomed.ctid AND d.expires_at < now()`,
  primaryKey: `DELETE FROM dedup_keys WHERE (source, event_id) IN (
  SELECT source, event_id FROM dedup_keys WHERE expires_at < now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
  AND expires_at < now()`,
};

type Kind = "raw" | "control" | "lib" | "join" | "primaryKey";
const LABELS: Record<Kind, string> = {
  control: "(a) on a connection of its own (control)",
  raw: "(a) raw pg loop, PRUNE_BATCH_SQL (ctid = ANY(ARRAY(… FOR UPDATE SKIP LOCKED)))",
  lib: "(b) library pruneExpiredKeys, no pause",
  join: "raw pg loop, DELETE … USING (CTE of ctids) join",
  primaryKey: "raw pg loop, DELETE … WHERE (source, event_id) IN (…)",
};

export type PruneBenchResult = {
  backlog: number;
  batchSize: number;
  cycles: number;
  rows: { kind: Kind; label: string; rowsPerSec: number; ratio: { median: number; q1: number; q3: number }; ratios: number[] }[];
  claims: {
    clients: number;
    idle: { p50: number; p99: number; perSec: number; requests: number };
    during: { p50: number; p99: number; perSec: number; requests: number };
    /** The library's default settings and its rows/s while the claims ran. */
    prune: { batchSize: number; pauseMs: number; rowsPerSec: number; overlapped: boolean };
  };
  aims: Aim[];
  seconds: number;
};

/**
 * `setup` inserts the backlogs, on connections no pruner uses. (a) and the other shapes run on a
 * connection taken from the library's own pool: the very backend the library's runs use (the pool's one
 * idle connection), so the comparison is of the code, not of two backends. On this shared machine a
 * backend that has just worked runs markedly faster than one that sat idle, which is what the control,
 * (a) on a client of its own, shows.
 */
export async function benchPruning(setup: pg.Pool, url: string, log: (msg: string) => void): Promise<PruneBenchResult> {
  const pool = setup;
  let controlClient: pg.Client | undefined;
  const clientOf = async (kind: Exclude<Kind, "lib">): Promise<{ client: pg.ClientBase; done: () => Promise<void> }> => {
    if (kind !== "control") {
      const client = await libPool().connect();
      return { client, done: async () => client.release() };
    }
    if (!controlClient) {
      controlClient = new pg.Client({ connectionString: url, application_name: "keyward-bench-control" });
      controlClient.on("error", () => {}); // the cleanup's DROP DATABASE … WITH (FORCE) may end it first
      await controlClient.connect();
    }
    return { client: controlClient, done: async () => {} };
  };
  const t0 = performance.now();
  // The library's pool, reopened with a long statement timeout: on a shared machine one batch stalled
  // behind someone else's disk traffic for the default 5 s must not fail the benchmark.
  process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = "120000";
  await closeDb();
  const backlog = knob("BENCH_PRUNE_BACKLOG", 200_000);
  const cycles = knob("BENCH_PRUNE_CYCLES", 8);
  const batchSize = knob("BENCH_PRUNE_BATCH", 5000);
  await pool.query(
    `INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds)
     VALUES ($1, 259200, 86400, 300, 259200, 605100) ON CONFLICT DO NOTHING`,
    [SOURCE],
  );
  let round = 0;
  /** A fresh backlog of `backlog` expired keys, oldest expiry first in insertion order, on a vacuumed table. */
  const fill = async () => {
    round++;
    await pool.query("VACUUM dedup_keys");
    await pool.query(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
       SELECT $1, 'p' || $2::int || '_' || i, 'invoice.paid', 'done', gen_random_uuid(), 'claimed',
              now() - interval '1 hour' + i * interval '1 ms'
       FROM generate_series(1, $3::int) i`,
      [SOURCE, round, backlog],
    );
    await pool.query("CHECKPOINT");
  };
  const check = (kind: Kind, rows: number) => {
    if (rows !== backlog) throw new Error(`${kind}: pruned ${rows} keys, expected the backlog of ${backlog}`);
  };

  const rawLoop = async (kind: Exclude<Kind, "lib">): Promise<number> => {
    const text = kind === "raw" || kind === "control" ? PRUNE_BATCH_SQL.text : SHAPES[kind];
    const { client, done } = await clientOf(kind);
    try {
      await client.query("SELECT 1");
      const start = performance.now();
      let rows = 0;
      for (;;) {
        const r = await client.query({ name: `bench_prune_${kind}`, text, values: [batchSize] });
        rows += r.rowCount ?? 0;
        if ((r.rowCount ?? 0) < batchSize) break;
      }
      check(kind, rows);
      return (rows * 1000) / (performance.now() - start);
    } finally {
      await done();
    }
  };
  const libRun = async (): Promise<number> => {
    await libPool().query("SELECT 1"); // the idle connection the run will take
    const start = performance.now();
    const outcome = await pruneExpiredKeys({ trigger: "cli", actor: "bench", batchSize, pauseMs: 0, budgetMs: 3_600_000 });
    const ms = performance.now() - start;
    if (!("run" in outcome)) throw new Error(`library prune skipped: ${outcome.skipped}`);
    check("lib", outcome.run.rows);
    return (outcome.run.rows * 1000) / ms;
  };
  const run = (kind: Kind) => (kind === "lib" ? libRun() : rawLoop(kind));

  // Warm-up: one of each, unmeasured (plans, connections, caches).
  log(`pruning: warming up (backlog ${backlog.toLocaleString("en-US")} expired keys, batch ${batchSize})`);
  for (const kind of ["raw", "lib"] as const) {
    await fill();
    await run(kind);
  }

  // raw, X, raw, Y, raw, …: every scenario's run is divided by the mean of the raw runs right before and
  // after it (the machine is shared; a burst of load elsewhere moves both sides of a ratio together).
  // The library runs BENCH_PRUNE_CYCLES times, the control twice, the other shapes (far slower) once.
  const rates = new Map<Kind, number[]>(); // rows/s per run
  const ratios = new Map<Kind, number[]>();
  const add = (m: Map<Kind, number[]>, k: Kind, v: number) => m.set(k, [...(m.get(k) ?? []), v]);
  const measured = async (kind: Kind) => {
    await fill();
    const r = await run(kind);
    add(rates, kind, r);
    return r;
  };
  let before = await measured("raw");
  // (b) first, strictly alternating with (a); then the control and the other shapes.
  const order: Kind[] = [...Array.from({ length: cycles }, (): Kind => "lib"), "control", "control", "join", "primaryKey"];
  for (const [i, kind] of order.entries()) {
    const r = await measured(kind);
    const after = await measured("raw");
    add(ratios, kind, r / ((before + after) / 2));
    before = after;
    log(`pruning: ${i + 1}/${order.length} (${kind} ${ratios.get(kind)!.at(-1)!.toFixed(2)}× raw, raw at ${Math.round(after).toLocaleString("en-US")} rows/s)`);
  }
  const others: Kind[] = ["lib", "control", "join", "primaryKey"];
  await controlClient?.end();
  const ratioOf = (kind: Kind) => {
    if (kind === "raw") return { median: 1, q1: 1, q3: 1 };
    const sorted = [...ratios.get(kind)!].sort((a, b) => a - b);
    return { median: percentile(sorted, 50), q1: percentile(sorted, 25), q3: percentile(sorted, 75) };
  };
  const rows = (["raw", ...others] as Kind[]).map((kind) => ({
    kind,
    label: LABELS[kind],
    rowsPerSec: median(rates.get(kind)!),
    ratio: ratioOf(kind),
    ratios: ratios.get(kind) ?? [],
  }));

  // Claims while idle, during a prune at the library's defaults, idle again; per cycle.
  const env = loadEnv();
  const claimOp = async () => {
    const r = await claimEvent({ source: SOURCE, eventId: newEventId(), eventType: "invoice.paid" });
    if (r.outcome !== "claimed") throw new Error(`claimEvent during the prune bench: ${JSON.stringify(r)}`);
  };
  const sliceMs = CLAIM_SLICE_MS;
  const idle: number[] = [];
  const during: number[] = [];
  let idleTime = 0;
  let idleOps = 0;
  let duringTime = 0;
  let duringOps = 0;
  const pruneRates: number[] = [];
  let overlapped = true;
  await Promise.all(Array.from({ length: CLAIM_CLIENTS }, claimOp)); // warm the library's connections
  for (let cycle = 0; cycle < CLAIM_CYCLES; cycle++) {
    await fill();
    const before = await drive(claimOp, CLAIM_CLIENTS, sliceMs, 1);
    const start = performance.now();
    let pruneDone = false;
    const prune = pruneExpiredKeys({ trigger: "cli", actor: "bench" }).finally(() => (pruneDone = true));
    const mid = await drive(claimOp, CLAIM_CLIENTS, sliceMs, 1);
    if (pruneDone) overlapped = false;
    const outcome = await prune;
    if (!("run" in outcome)) throw new Error("library prune skipped");
    pruneRates.push((outcome.run.rows * 1000) / (performance.now() - start));
    const after = await drive(claimOp, CLAIM_CLIENTS, sliceMs, 1);
    for (const s of [before, after]) {
      idle.push(...s.latenciesMs);
      idleOps += s.opsPerSec;
      idleTime++;
    }
    during.push(...mid.latenciesMs);
    duringOps += mid.opsPerSec;
    duringTime++;
    log(`pruning: claims during a prune, ${cycle + 1}/${CLAIM_CYCLES} done`);
  }
  const stat = (lat: number[], opsPerSec: number, slices: number) => {
    const sorted = [...lat].sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), perSec: opsPerSec / slices, requests: lat.length };
  };
  const claims = {
    clients: CLAIM_CLIENTS,
    idle: stat(idle, idleOps, idleTime),
    during: stat(during, duringOps, duringTime),
    prune: { batchSize: env.KEYWARD_PRUNE_BATCH_SIZE, pauseMs: env.KEYWARD_PRUNE_PAUSE_MS, rowsPerSec: median(pruneRates), overlapped },
  };

  const lib = rows.find((r) => r.kind === "lib")!.ratio.median;
  const p99Ratio = claims.during.p99 / claims.idle.p99;
  const aims: Aim[] = [
    { text: "library prune ≥ 0.9× the raw pg loop (rows/s)", value: `${lib.toFixed(2)}×`, met: lib >= 0.9 },
    { text: "claim p99 during a prune ≤ 2× idle", value: `${p99Ratio.toFixed(2)}×`, met: p99Ratio <= 2 },
  ];
  return { backlog, batchSize, cycles, rows, claims, aims, seconds: Math.round((performance.now() - t0) / 1000) };
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));

export function pruneText(r: PruneBenchResult): string {
  const c = r.claims;
  return [
    `Pruning ${int(r.backlog)} expired keys, batch ${r.batchSize}; (b) run ${r.cycles} times:`,
    ...r.rows.map((x) => `  ${x.label}: ${int(x.rowsPerSec)} rows/s${x.kind === "raw" ? "" : `, ${x.ratio.median.toFixed(2)}× [${x.ratio.q1.toFixed(2)}–${x.ratio.q3.toFixed(2)}]`}`),
    `Library claims at ${c.clients} clients: idle p50 ${ms(c.idle.p50)} ms, p99 ${ms(c.idle.p99)} ms, ${int(c.idle.perSec)}/s; ` +
      `during a prune p50 ${ms(c.during.p50)} ms, p99 ${ms(c.during.p99)} ms, ${int(c.during.perSec)}/s`,
  ].join("\n");
}

/** The "## Pruning" section of docs/benchmarks.md, between markers so that `BENCH_PARTS=prune` can replace it alone. */
export function pruneMarkdown(r: PruneBenchResult, when: string): string {
  const c = r.claims;
  const x = (n: number) => `${n.toFixed(2)}×`;
  const table = [
    "| scenario | rows/s | vs (a) [middle half] |",
    "| --- | ---: | --- |",
    ...r.rows.map(
      (row) =>
        `| ${row.kind === "raw" ? `**${row.label}**` : row.label} | ${int(row.rowsPerSec)} | ${
          row.kind === "raw" ? "1.00× (baseline)" : `${x(row.ratio.median)} [${row.ratio.q1.toFixed(2)}–${row.ratio.q3.toFixed(2)}]`
        } |`,
    ),
  ].join("\n");
  const claims = [
    "| library claimEvent, 8 clients | claims/s | p50 ms | p99 ms |",
    "| --- | ---: | ---: | ---: |",
    `| idle (slices before and after each prune) | ${int(c.idle.perSec)} | ${ms(c.idle.p50)} | ${ms(c.idle.p99)} |`,
    `| during a prune (batch ${c.prune.batchSize}, pause ${c.prune.pauseMs} ms) | ${int(c.during.perSec)} | ${ms(c.during.p50)} (${x(c.during.p50 / c.idle.p50)}) | ${ms(c.during.p99)} (${x(c.during.p99 / c.idle.p99)}) |`,
  ].join("\n");
  return `${PRUNE_START}
## Pruning

Measured ${when}.
${int(r.backlog)} expired keys each time, batch size ${r.batchSize}; (b) run ${r.cycles} times, the control
twice, the other shapes once; this part took ${r.seconds} s (\`BENCH_PARTS=prune npm run bench\` reruns
only it).

${table}

Each run's ratio, in order: ${r.rows
    .filter((row) => row.kind === "lib" || row.kind === "control")
    .map((row) => `${row.kind === "lib" ? "(b)" : "control"} ${row.ratios.map((v) => v.toFixed(2)).join(", ")}`)
    .join("; ")}.

Every run deletes a freshly inserted backlog (the table vacuumed before the insert, a CHECKPOINT after
it, the insert made on connections no pruner uses), one batch per statement, each statement its own
transaction, until a batch comes back short. Runs alternate (a), X, (a), Y, (a) …; each run of X is
divided by the mean of the (a) runs right before and after it; the median of those ratios is quoted,
the middle half in brackets. (a) is a plain \`pg\` loop over \`PRUNE_BATCH_SQL\` from
lib/retention/prune.ts on a connection taken from the library's own pool, the very backend the
library's runs use, so that the comparison is of the code and not of two backends; (b) is
\`pruneExpiredKeys\` with \`pauseMs: 0\`, timed from the call to its answer: the pool connection, the
lease, the \`prune_runs\` row, the batches, the record's completion, the lease's release. The
control is (a) on a client of its own: it shows what merely changing backends does to a ratio on this
shared machine (a backend that has just worked runs faster than one that sat idle). The last two rows
are the same batch written as a join on ctid and as an \`IN\` on the primary key, on (a)'s connection.

${claims}

${CLAIM_CYCLES} times: a ${CLAIM_SLICE_MS} ms slice of 8 closed loops claiming fresh events through \`claimEvent\`
while idle, one while the library prunes the backlog at its defaults on the same pool (${int(c.prune.rowsPerSec)} rows/s,
pauses included${c.prune.overlapped ? "; the prune outlasted every slice" : "; in some run the prune ended before the slice did"}), one idle again.
Latency percentiles pool every claim of the slices of a kind; the ratio in parentheses is to idle.

${r.aims.map((a) => `- ${a.met ? "✅ met" : "❌ not met"}: ${a.text}: ${a.value}`).join("\n")}
${PRUNE_END}
`;
}

export const PRUNE_START = "<!-- pruning: written by bench/prune.ts -->";
export const PRUNE_END = "<!-- /pruning -->";

/** Puts the pruning section into an existing report: replaces the previous one, or appends it. */
export function spliceSection(doc: string, section: string, start = PRUNE_START, end = PRUNE_END): string {
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i >= 0 && j > i) return doc.slice(0, i) + section.trimEnd() + doc.slice(j + end.length);
  return `${doc.trimEnd()}\n\n${section}`;
}
