/**
 * The bench's "pooler" part: what KEYWARD_DB_PREPARED_STATEMENTS=off costs, and what a transaction-mode
 * PgBouncer in front of PostgreSQL costs on top, in claims per second through the library (claimEvent on
 * a pool made by lib/db/client.ts createPool, as the server's).
 *
 *   (on)            named prepared statements, straight to PostgreSQL: the default, the baseline
 *   (off)           the same pool, statements sent unnamed (parsed and planned on every call)
 *   (off, pgbouncer) unnamed, through Debian's pgbouncer (test/setup/pgbouncer.ts: transaction pooling,
 *                    as many server connections as the pool has clients)
 *
 * Interleaved like the claim part: in every cycle each shape runs (on), X, (on), Y, (on) in short slices
 * with the order of X and Y rotated, and each slice of X is divided by the (on) slices on either side of
 * it; the median over cycles is quoted, the middle half in brackets.
 */
import { connectionDb } from "@/lib/db/transaction";
import type pg from "pg";
import { claimEvent, claimEvents } from "@/lib/claims/claim";
import { createPool } from "@/lib/db/client";
import { forgetNamedStatementsSetting } from "@/lib/db/sql";
import { pgbouncerInstalled, startPgBouncer } from "@/test/setup/pgbouncer";
import { drive, type Op } from "./drive";
import { newEventId } from "./scenarios";
import { eventsPerSec, rotate, summarise, type CellSummary, type Paired, type RoundSample } from "./stats";

export const POOLER_START = "<!-- pooler: written by bench/pooler.ts -->";
export const POOLER_END = "<!-- /pooler -->";

const CYCLES = Number(process.env.BENCH_POOLER_CYCLES ?? process.env.BENCH_CYCLES ?? 6);
const SLICE_MS = Number(process.env.BENCH_POOLER_SLICE_MS ?? 400);
const SHAPES = [
  { clients: 1, batch: 1 },
  { clients: 8, batch: 1 },
  { clients: 8, batch: 100 },
];

type Kind = "on" | "off" | "bouncer";
const LABEL: Record<Kind, string> = {
  on: "(on) named prepared statements, direct",
  off: "(off) unnamed statements, direct",
  bouncer: "(off) unnamed, through PgBouncer 1.18 (transaction mode)",
};

export type PoolerRow = { kind: Kind; clients: number; batch: number; s: CellSummary };
export type PoolerResult = { rows: PoolerRow[]; cycles: number; sliceMs: number; poolMax: number; pgbouncer: string; seconds: number };

function useNamed(on: boolean): void {
  process.env.KEYWARD_DB_PREPARED_STATEMENTS = on ? "on" : "off";
  forgetNamedStatementsSetting();
}

export async function benchPooler(
  databaseUrl: string,
  source: string,
  poolMax: number,
  log: (msg: string) => void,
  cleanups: (() => Promise<unknown> | void)[],
): Promise<PoolerResult | undefined> {
  if (!pgbouncerInstalled()) {
    log("pooler: pgbouncer is not installed (apt-get install -y pgbouncer); part skipped");
    return undefined;
  }
  const t0 = performance.now();
  const bouncer = await startPgBouncer({ serverUrl: databaseUrl, poolSize: poolMax });
  cleanups.push(() => bouncer.stop());
  const version = /PgBouncer [\d.]+/.exec(bouncer.output())?.[0] ?? "PgBouncer";
  const direct = createPool(databaseUrl);
  const through = createPool(bouncer.through(databaseUrl));
  cleanups.push(() => Promise.all([direct.end(), through.end()]));
  const previous = process.env.KEYWARD_DB_PREPARED_STATEMENTS;
  cleanups.push(() => {
    if (previous === undefined) delete process.env.KEYWARD_DB_PREPARED_STATEMENTS;
    else process.env.KEYWARD_DB_PREPARED_STATEMENTS = previous;
    forgetNamedStatementsSetting();
  });

  const op = (pool: pg.Pool, batch: number): Op =>
    batch === 1
      ? async () => {
          const r = await claimEvent({ source, eventId: newEventId(), eventType: "bench" }, {}, connectionDb(pool));
          if (r.outcome !== "claimed") throw new Error(`pooler bench: expected claimed, got ${r.outcome}`);
        }
      : async () => {
          const rs = await claimEvents({ source, events: Array.from({ length: batch }, () => ({ eventId: newEventId(), eventType: "bench" })) }, {}, connectionDb(pool));
          if (rs.some((r) => r.outcome !== "claimed")) throw new Error("pooler bench: a batch event was not claimed");
        };
  const slice = async (kind: Kind, clients: number, batch: number): Promise<RoundSample> => {
    useNamed(kind === "on");
    const pool = kind === "bouncer" ? through : direct;
    const run = op(pool, batch);
    await Promise.all(Array.from({ length: clients }, run)); // untimed: every client's connection warm
    return drive(run, clients, SLICE_MS, batch);
  };

  log(`pooler: ${version} on port ${bouncer.port}; ${CYCLES} cycles of ${SLICE_MS} ms slices`);
  for (const { clients, batch } of SHAPES) for (const k of ["on", "off", "bouncer"] as Kind[]) await slice(k, clients, batch); // warm-up

  const rows: PoolerRow[] = [];
  for (const { clients, batch } of SHAPES) {
    const baseline: RoundSample[] = [];
    const paired: Record<"off" | "bouncer", Paired[]> = { off: [], bouncer: [] };
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      let before = await slice("on", clients, batch);
      baseline.push(before);
      for (const k of rotate(["off", "bouncer"] as const, cycle)) {
        const sample = await slice(k, clients, batch);
        const after = await slice("on", clients, batch);
        baseline.push(after);
        paired[k].push({ sample, baselineEventsPerSec: (eventsPerSec(before) + eventsPerSec(after)) / 2 });
        before = after;
      }
    }
    rows.push({ kind: "on", clients, batch, s: summarise(baseline.map((b) => ({ sample: b, baselineEventsPerSec: eventsPerSec(b) })), baseline) });
    for (const k of ["off", "bouncer"] as const) rows.push({ kind: k, clients, batch, s: summarise(paired[k], baseline) });
    log(`pooler: ${batch === 1 ? "single claims" : `batches of ${batch}`} at ${clients} client${clients > 1 ? "s" : ""} done`);
  }
  return { rows, cycles: CYCLES, sliceMs: SLICE_MS, poolMax, pgbouncer: version, seconds: Math.round((performance.now() - t0) / 1000) };
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const shapeOf = (r: PoolerRow) => `${r.batch === 1 ? "single" : `batch ${r.batch}`}, ${r.clients} client${r.clients > 1 ? "s" : ""}`;
const ratioOf = (r: PoolerRow) => (r.kind === "on" ? "1.00× (baseline)" : `${r.s.ratio.median.toFixed(2)}× [${r.s.ratio.q1.toFixed(2)}–${r.s.ratio.q3.toFixed(2)}]`);

export function poolerText(r: PoolerResult): string {
  return [
    `Prepared statements on/off, and PgBouncer (${r.pgbouncer}, transaction mode): library claims, ${r.cycles} cycles`,
    ...r.rows.map((row) => `  ${shapeOf(row).padEnd(22)} ${LABEL[row.kind].padEnd(58)} ${int(row.s.eventsPerSec).padStart(8)} claims/s  ${ratioOf(row)}  p50 ${row.s.p50.toFixed(2)} ms  p99 ${row.s.p99.toFixed(2)} ms`),
  ].join("\n");
}

export function poolerMarkdown(r: PoolerResult, when: string): string {
  const table = [
    "| shape | scenario | claims/s | ÷ (on) | p50 ms | p99 ms |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
    ...r.rows.map(
      (row) =>
        `| ${shapeOf(row)} | ${row.kind === "on" ? `**${LABEL[row.kind]}**` : LABEL[row.kind]} | ${int(row.s.eventsPerSec)} | ${ratioOf(row)} | ${row.s.p50.toFixed(2)} | ${row.s.p99.toFixed(2)} |`,
    ),
  ].join("\n");
  return `${POOLER_START}
## Prepared statements off, and PgBouncer

Measured ${when}. ${r.cycles} cycles of ${r.sliceMs} ms slices per scenario, pool of ${r.poolMax}
connections; this part took ${r.seconds} s (\`BENCH_PARTS=pooler npm run bench\` reruns only it).

${table}

What \`KEYWARD_DB_PREPARED_STATEMENTS=off\` costs (the setting PgBouncer before 1.21 in transaction mode
needs): every claim statement is parsed and planned again instead of once per connection. The last row
of each shape adds the PgBouncer hop as deployed behind it (docs/reliability.md, "Behind PgBouncer,
several servers"): ${r.pgbouncer} in transaction pooling mode with as many server connections as the
pool's clients, on the same machine. All three are \`claimEvent\` / \`claimEvents\` on a pool made by
lib/db/client.ts \`createPool\`, fresh event ids, every answer checked to be \`claimed\`. Each slice of
(off) and of (off, PgBouncer) is divided by the mean of the (on) slices right before and after it; the
median over cycles is quoted, the middle half in brackets. With PgBouncer 1.21 or later and
\`max_prepared_statements\` set, named statements work through it and (on) applies.
${POOLER_END}
`;
}
