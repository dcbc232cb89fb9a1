/**
 * The embedded-database row of `npm run bench` (BENCH_PARTS=embedded): single claims per second through
 * HTTP (POST /api/v1/claims, fresh event ids, keep-alive clients) at 1 and 8 clients, against a server on
 * the embedded database (`keyward start` with no DATABASE_URL, a fresh KEYWARD_DATA_DIR) as a ratio to
 * the same requests against a server on PostgreSQL (the benchmark database), measured in the same run.
 *
 * Interleaved as the claim benchmark is: per cycle and client count, PostgreSQL slice, embedded slice,
 * PostgreSQL slice; each embedded slice is divided by the mean of the PostgreSQL slices around it and
 * the median over cycles is quoted, the middle half in brackets. Every answer must be 201 `claimed`: a
 * single error stops the benchmark.
 *
 * Knobs: BENCH_EMBEDDED_CYCLES (5), BENCH_EMBEDDED_SLICE_MS (1000).
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { drive } from "./drive";
import { JsonClient } from "./http-client";
import { startEmbeddedServer, startServer, type RunningServer } from "./server";
import { newEventId } from "./scenarios";
import { median, percentile, summarise, type Paired, type RoundSample } from "./stats";

export const EMBEDDED_START = "<!-- embedded: written by bench/embedded.ts -->";
export const EMBEDDED_END = "<!-- /embedded -->";

const ROOT = path.resolve(__dirname, "..");
const CLIENTS = [1, 8];

const knob = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};

export type EmbeddedRow = {
  clients: number;
  postgresPerSec: number;
  embeddedPerSec: number;
  ratio: { median: number; q1: number; q3: number };
  postgresP50: number;
  embeddedP50: number;
  embeddedP99: number;
  requests: number;
};

export type EmbeddedResult = { rows: EmbeddedRow[]; cycles: number; sliceMs: number; seconds: number };

function cli(dataDir: string, ...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, KEYWARD_DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(ROOT, "bin/keyward.cjs"), ...args], { cwd: ROOT, env, timeout: 120_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`keyward ${args.join(" ")}: ${stderr || err.message}`)) : resolve(stdout),
    );
  });
}

function claimOp(client: JsonClient, source: string) {
  return async () => {
    const r = await client.post("/api/v1/claims", JSON.stringify({ source, eventId: newEventId(), eventType: "invoice.paid" }));
    if (r.status !== 201) throw new Error(`POST /api/v1/claims answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
  };
}

/**
 * `postgres`: the benchmark database's URL, its source name and an API key with claims:write there.
 * Starts both servers, measures, stops both (also on failure, through `cleanups`).
 */
export async function benchEmbedded(
  postgres: { databaseUrl: string; source: string; apiKey: string },
  log: (msg: string) => void,
  cleanups: (() => Promise<unknown> | void)[],
): Promise<EmbeddedResult> {
  const cycles = knob("BENCH_EMBEDDED_CYCLES", 5);
  const sliceMs = knob("BENCH_EMBEDDED_SLICE_MS", 1000);
  const t0 = performance.now();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "keyward-bench-embedded-"));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));

  log("embedded: starting a server on PostgreSQL and one on the embedded database");
  const servers: RunningServer[] = [];
  cleanups.push(() => Promise.all(servers.map((s) => s.stop())));
  const [pgServer, embServer] = await Promise.all([startServer(postgres.databaseUrl), startEmbeddedServer(dataDir)]);
  servers.push(pgServer, embServer);
  // The embedded database's source and key, made as a user would: the CLI, while its server runs.
  const source = "bench";
  await cli(dataDir, "source", "create", source, "--retry-window", "3d", "--queue-lag", "1d", "--clock-skew", "5m", "--replay", "3d");
  const embKey = (await cli(dataDir, "apikey", "create", "--name", "bench", "--scopes", "claims:write")).trim();

  const clients = new Map<string, JsonClient>();
  cleanups.push(() => clients.forEach((c) => c.close()));
  const clientFor = (base: string, n: number, key: string) => {
    const id = `${base}:${n}`;
    if (!clients.has(id)) clients.set(id, new JsonClient(base, n, { authorization: `Bearer ${key}` }));
    return clients.get(id)!;
  };
  const ops = (n: number) => ({
    postgres: claimOp(clientFor(pgServer.baseUrl, n, postgres.apiKey), postgres.source),
    embedded: claimOp(clientFor(embServer.baseUrl, n, embKey), source),
  });
  const slice = async (op: () => Promise<void>, n: number, ms: number): Promise<RoundSample> => {
    await Promise.all(Array.from({ length: n }, op)); // untimed: every client's connection warm
    return drive(op, n, ms, 1);
  };

  log("embedded: warming up");
  for (const n of CLIENTS) {
    await slice(ops(n).postgres, n, 500);
    await slice(ops(n).embedded, n, 500);
  }

  const paired = new Map<number, Paired[]>(CLIENTS.map((n) => [n, []]));
  const baselines = new Map<number, RoundSample[]>(CLIENTS.map((n) => [n, []]));
  for (let cycle = 0; cycle < cycles; cycle++) {
    for (const n of CLIENTS) {
      const { postgres: pgOp, embedded: embOp } = ops(n);
      const before = await slice(pgOp, n, sliceMs);
      const sample = await slice(embOp, n, sliceMs);
      const after = await slice(pgOp, n, sliceMs);
      baselines.get(n)!.push(before, after);
      paired.get(n)!.push({ sample, baselineEventsPerSec: (before.opsPerSec + after.opsPerSec) / 2 });
    }
    log(`embedded: cycle ${cycle + 1}/${cycles} done`);
  }
  await Promise.all(servers.map((s) => s.stop()));

  const rows = CLIENTS.map((n): EmbeddedRow => {
    const s = summarise(paired.get(n)!, baselines.get(n)!);
    const pgLat = baselines.get(n)!.flatMap((b) => b.latenciesMs).sort((a, b) => a - b);
    return {
      clients: n,
      postgresPerSec: median(baselines.get(n)!.map((b) => b.opsPerSec)),
      embeddedPerSec: s.opsPerSec,
      ratio: s.ratio,
      postgresP50: percentile(pgLat, 50),
      embeddedP50: s.p50,
      embeddedP99: s.p99,
      requests: s.requests,
    };
  });
  return { rows, cycles, sliceMs, seconds: Math.round((performance.now() - t0) / 1000) };
}

const f0 = (n: number) => Math.round(n).toLocaleString("en-US");
const f2 = (n: number) => n.toFixed(2);
const ms = (n: number) => `${n.toFixed(1)} ms`;

export function embeddedText(r: EmbeddedResult): string {
  const lines = ["Embedded PostgreSQL vs the machine's PostgreSQL, HTTP single claims:"];
  for (const row of r.rows) {
    lines.push(
      `  ${row.clients} client${row.clients > 1 ? "s" : " "}: embedded ${f0(row.embeddedPerSec)}/s vs PostgreSQL ${f0(row.postgresPerSec)}/s = ` +
        `${f2(row.ratio.median)}× [${f2(row.ratio.q1)}–${f2(row.ratio.q3)}], p50 ${ms(row.embeddedP50)} vs ${ms(row.postgresP50)}, p99 ${ms(row.embeddedP99)}`,
    );
  }
  return lines.join("\n");
}

export function embeddedMarkdown(r: EmbeddedResult, when: string): string {
  const rows = r.rows
    .map(
      (row) =>
        `| ${row.clients} | ${f0(row.embeddedPerSec)} | ${f0(row.postgresPerSec)} | **${f2(row.ratio.median)}×** [${f2(row.ratio.q1)}–${f2(row.ratio.q3)}] | ${ms(row.embeddedP50)} / ${ms(row.embeddedP99)} | ${ms(row.postgresP50)} | ${f0(row.requests)} |`,
    )
    .join("\n");
  return `${EMBEDDED_START}
## Embedded database

Measured ${when}. ${r.cycles} cycles of ${r.sliceMs / 1000} s slices; this part took ${r.seconds} s
(\`BENCH_PARTS=embedded npm run bench\` reruns only it).

Single claims (\`POST /api/v1/claims\`, a fresh event id each, keep-alive clients) against two servers
started the same way, \`keyward start --no-build\`: one on the embedded database (no \`DATABASE_URL\`, a
fresh data directory: the bundled PostgreSQL server started by Keyward, lib/db/embedded.ts), one on the
machine's PostgreSQL (the benchmark database). Both use named prepared statements and the same pool.
In every cycle: PostgreSQL slice, embedded slice, PostgreSQL slice; the ratio is the
embedded slice ÷ the mean of the two around it, the median over cycles, the middle half in brackets.
Every answer was \`201 claimed\`.

| clients | embedded claims/s | PostgreSQL claims/s | embedded ÷ PostgreSQL | embedded p50 / p99 | PostgreSQL p50 | embedded requests |
|---|---|---|---|---|---|---|
${rows}

Absolute rates follow the machine's load (the load average above: this machine is shared); the ratios,
taken between slices a second apart, are the figures to compare. Both are real PostgreSQL servers
with synchronous commit on the same disk and cores (the embedded one is PostgreSQL 18, the machine's the
version it has), so the ratio is about 1 at any client count (docs/architecture.md, "The embedded
database"). Before issue 21 the embedded database was PGlite behind a protocol server of Keyward's own,
one statement at a time: 0.47× at 1 client and 0.24× at 8 in the issue's trial.
${EMBEDDED_END}
`;
}
