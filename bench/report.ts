/**
 * Rendering: the results table for stdout and docs/benchmarks.md. Pure functions of the summaries.
 */
import type { Block, Cell } from "./scenarios";
import type { CellSummary } from "./stats";

export type Row = { block: Block; cell: Cell; s: CellSummary };

export type Machine = {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  postgres: string;
  pgSettings: string;
  loadAverage: string;
  commit: string;
  /** How the server for the HTTP scenarios was started, and when its .next build was made. */
  server: string;
  build: string;
};

export type RunConfig = { cycles: number; sliceMs: number; poolMax: number; totalSeconds: number };

export type Aim = { text: string; value: string; met: boolean };

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0));
const x = (n: number) => `${n.toFixed(2)}×`;

type Column = { title: string; value: (r: Row) => string; right?: boolean };

function columns(unit: "claims/s" | "req/s"): Column[] {
  return [
    { title: "scenario", value: (r) => r.cell.label },
    { title: "clients", value: (r) => String(r.cell.clients), right: true },
    { title: "batch", value: (r) => String(r.cell.batch), right: true },
    { title: unit, value: (r) => int(unit === "req/s" ? r.s.opsPerSec : r.s.eventsPerSec), right: true },
    {
      title: "vs (a) [middle half]",
      value: (r) =>
        r.cell.kind === "raw" ? "1.00× (baseline)" : `${x(r.s.ratio.median)} [${r.s.ratio.q1.toFixed(2)}–${r.s.ratio.q3.toFixed(2)}]`,
    },
    { title: "p50 ms (vs a)", value: (r) => (r.cell.kind === "raw" ? ms(r.s.p50) : `${ms(r.s.p50)} (${x(r.s.p50Ratio)})`), right: true },
    { title: "p99 ms (vs a)", value: (r) => (r.cell.kind === "raw" ? ms(r.s.p99) : `${ms(r.s.p99)} (${x(r.s.p99Ratio)})`), right: true },
  ];
}

/** Rows of one table, grouped by block, with a blank separator line between blocks in text form. */
export function textTable(rows: Row[], unit: "claims/s" | "req/s" = "claims/s"): string {
  const cols = columns(unit);
  const cells = rows.map((r) => cols.map((c) => c.value(r)));
  const width = cols.map((c, i) => Math.max(c.title.length, ...cells.map((row) => row[i].length)));
  const line = (vals: string[]) =>
    vals.map((v, i) => (cols[i].right ? v.padStart(width[i]) : v.padEnd(width[i]))).join("  ").trimEnd();
  const out = [line(cols.map((c) => c.title)), line(width.map((w) => "-".repeat(w)))];
  rows.forEach((r, i) => {
    if (i > 0 && rows[i - 1].block !== r.block) out.push("");
    out.push(line(cells[i]));
  });
  return out.join("\n");
}

export function markdownTable(rows: Row[], unit: "claims/s" | "req/s" = "claims/s"): string {
  const cols = columns(unit);
  const out = [
    `| ${cols.map((c) => c.title).join(" | ")} |`,
    `| ${cols.map((c) => (c.right ? "---:" : "---")).join(" | ")} |`,
  ];
  for (const r of rows) {
    const vals = cols.map((c) => c.value(r).replace(/\|/g, "\\|"));
    if (r.cell.kind === "raw") vals[0] = `**${vals[0]}**`; // the baseline of the rows below it
    out.push(`| ${vals.join(" | ")} |`);
  }
  return out.join("\n");
}

export function aimLines(aims: Aim[]): string[] {
  return aims.map((a) => `${a.met ? "met    " : "NOT MET"}  ${a.text}: ${a.value}`);
}

/** The HTTP cost split at one concurrency, from the p50 latencies of the split scenarios. */
export function costSplit(rows: Row[], clients: number): string[] {
  const find = (kind: string) => rows.find((r) => r.cell.kind === kind && r.cell.batch === 1 && r.cell.clients === clients);
  const [h401, h422, http, verify, raw] = ["http401", "http422", "http", "verify", "raw"].map(find);
  if (!h401 || !h422 || !http || !verify || !raw) return [];
  const p = (r: Row) => r.s.p50;
  const delta = (v: number) => `${v < 0 ? "−" : "+"}${ms(Math.abs(v))}`;
  return [
    `HTTP request, no database (401):                     p50 ${ms(p(h401))} ms, ${int(h401.s.opsPerSec)} req/s`,
    `+ API-key verification, body read, zod (422):        p50 ${ms(p(h422))} ms (${delta(p(h422) - p(h401))}), ${int(h422.s.opsPerSec)} req/s`,
    `+ the claim itself, classify, JSON answer (201):     p50 ${ms(p(http))} ms (${delta(p(http) - p(h422))}), ${int(http.s.opsPerSec)} req/s`,
    `for reference, in-process: verifyApiKey p50 ${ms(p(verify))} ms (${int(verify.s.opsPerSec)}/s); raw CLAIM_SQL p50 ${ms(p(raw))} ms (${int(raw.s.opsPerSec)}/s)`,
  ];
}

export function markdownReport(args: {
  machine: Machine;
  config: RunConfig;
  main: Row[];
  driver: Row[];
  split: Row[];
  splitLines: Record<number, string[]>;
  aims: Aim[];
}): string {
  const { machine: m, config: c } = args;
  const splitText = Object.entries(args.splitLines)
    .filter(([, lines]) => lines.length > 0)
    .map(([clients, lines]) => `At ${clients} client${clients === "1" ? "" : "s"}:\n\n\`\`\`\n${lines.join("\n")}\n\`\`\``)
    .join("\n\n");
  return `# Benchmarks

Produced by \`npm run bench\` (bench/run.ts). Every run overwrites this file; the figures below are
from one run on a shared machine, so read the **ratios**, not the absolute numbers.

## Machine and run

- Date: ${m.date}
- CPU: ${m.cpu}, ${m.cores} cores; memory ${m.memoryGiB.toFixed(1)} GiB; ${m.os}
- Node ${m.node}; PostgreSQL ${m.postgres} (${m.pgSettings}), local TCP on 127.0.0.1
- Load average when the run started: ${m.loadAverage}
- Code: commit ${m.commit}; HTTP against the existing \`.next\` build (built ${m.build}), server started
  with \`${m.server}\`
- ${c.cycles} cycles; slices of ${c.sliceMs} ms for single claims, ${c.sliceMs * 1.5} ms for batches of 100, ${c.sliceMs * 3} ms
  for batches of 1000; pool size ${c.poolMax} for the raw pool, the library's pool and the server's pool;
  whole run ${c.totalSeconds} s

## Results

${markdownTable(args.main)}

## Aims

${args.aims.map((a) => `- ${a.met ? "✅ met" : "❌ not met"}: ${a.text}: ${a.value}`).join("\n")}

## The same statement through Prisma, unprepared, and on fresh connections

The library runs CLAIM_SQL as a named prepared statement (\`{ name, text, values }\`) on the pg pool
that Prisma's adapter also uses: PostgreSQL parses and plans it once per connection.

- **Prisma** runs the identical statement and parameters through \`prisma.$queryRawUnsafe\` on that
  pool instead.
- **unprepared** runs it on the raw pool as plain text: parsed and planned on every call.
- **fresh connections** runs it on a pool created anew before each slice (after one untimed request
  per client): what a pool pays after closing idle connections (lib/db/client.ts keeps them
  \`KEYWARD_DB_IDLE_TIMEOUT_MS\`, 5 minutes by default).

${markdownTable(args.driver)}

## Where an HTTP claim's time goes

${markdownTable(args.split, "req/s")}

${splitText}

Each request to \`/api/v1/claims\` costs one statement, the claim: the server checks the API key in memory
(lib/auth/api-key-cache.ts; a revoked key is refused everywhere within 1 s). The "verifyApiKey, in-process"
row is this benchmark process, which has no cache: one indexed read of \`api_keys\`. The 401 row's requests
are refused before their body is read, so each closes its connection: it measures new connections too.

## How to read this

- **(a) raw pg** is the baseline: a plain \`pg.Pool\` (no Prisma, no Keyward code) running the library's
  statement from lib/claims/claim.ts (\`CLAIM_ONE_SQL\` for one event, \`CLAIM_SQL\` for a batch) with
  exactly the parameters the library sends. The machine is
  shared, so the run is interleaved: for each shape (batch size × clients) every cycle runs
  (a), X1, (a), X2, …, (a) in short slices, and each scenario's slice is divided by the mean of the (a)
  slices right before and after it. The **vs (a)** figure is the median of those ratios over the
  cycles; the brackets hold the middle half of the cycles (25th–75th percentile). A wide bracket means
  the machine was noisy while that scenario ran; the median is still the figure to quote.
- **(a) again on a second pool (control)** is the baseline's own statement on a second, identical
  pool, measured like every other scenario. It reads a little under 1× because the baseline's
  connections are busy every other slice while any other scenario's have been idle since its last
  slice: treat the control's ratio as "no difference" when reading the rows around it.
- **(m) minimal claim** is the design's minimal claim (issue 15): one statement, \`INSERT … ON CONFLICT DO
  NOTHING RETURNING\` into \`dedup_keys\` and the audit row into \`audit_events\` (same tables and
  indexes), the TTL as a parameter, no merge, no audit detail, prepared like (a). The statement's own
  figure is (a) ÷ (m), in the aims.
- **(a′) bare INSERT** is that insert without the audit row, unprepared: what the key table alone costs.
- **(b) library** is \`claimEvent\` / \`claimEvents\` in this process: zod validation, in-batch
  de-duplication, classification of the rows into answers, in-memory outcome counters (flushed every
  5 s, off the hot path) and the shared pool.
- **(c) HTTP** is the real server (\`node bin/keyward.cjs start --no-build\`, a separate process)
  answering \`POST /api/v1/claims\` or \`/api/v1/claims/batch\` with a Bearer API key over keep-alive
  connections (one per client), from a lean HTTP/1.1 load client (test/bench/lean-client.ts; the row
  "load from node:http's client" shows what node:http's client costs instead). It adds the server's
  HTTP parsing, the fast lane, JSON in and out, and the client's own work, all on the same ${m.cores} cores
  as PostgreSQL.
- **(c-r)** is a second server, the same but with \`KEYWARD_REDIS_URL\` (the machine's Redis, in a namespace
  of the benchmark database's own). The **duplicate storm** sends every event 10 times (1 first claim,
  9 duplicates), as a sender retrying each delivery; the Redis aims compare (c-r) with (c), both measured
  against the same (a) slices.
- **duplicate claim** re-claims ids claimed during setup: \`ON CONFLICT DO UPDATE\` through
  \`keyward_merge_claim\`, which counts the duplicate (a row update, no audit row). Its ratio is to the
  first-claim (a) row of the same shape.
- Every first claim uses a fresh random event id, so every claim is the expensive path: a new key, a
  new index entry, an audit row, a commit (synchronous_commit as shown above).
- **clients** are concurrent closed loops (each sends its next request when the previous one is
  answered). **claims/s** counts events, so a batch of 1000 counts 1000. **p50 / p99** are per request
  (per batch for batches), over all slices; the ratio in parentheses is to (a)'s percentile (above 1× =
  slower).
- The order of the scenarios rotates from cycle to cycle, so none always runs first. Before each slice
  every client sends one untimed request. Each scenario runs once per cycle, tens of seconds apart;
  the library's and the server's pools keep idle connections 5 minutes (KEYWARD_DB_IDLE_TIMEOUT_MS), so
  the figures are steady-state figures; the "fresh connections" row shows what new backends cost.
- claims/s is the median over slices of the absolute rate, for orientation only: it moves with
  whatever else the machine is doing. The ratios are what carry from one run to the next.
`;
}
