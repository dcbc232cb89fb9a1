/**
 * `npm run bench`: claims per second and p50/p99 latency of (a) raw pg running CLAIM_SQL, (a′) the bare
 * INSERT … ON CONFLICT DO NOTHING, (b) the in-process library and (c) the HTTP API against the real
 * server, for single claims and batches, each quoted as a ratio to (a) measured right around it.
 * Prints the table and writes docs/benchmarks.md. A benchmark, not a test: it asserts nothing but that
 * every request got the answer it should.
 *
 * It creates its own database on the local PostgreSQL (BENCH_DATABASE_URL's server, default
 * postgresql://postgres@127.0.0.1:5432/postgres), starts the server on a free port, and drops the
 * database and stops the server at the end, also on failure or Ctrl-C.
 *
 * The machine is shared and noisy, so the measurement is interleaved: in every cycle, each block
 * (one shape: batch size × clients) runs baseline, X1, baseline, X2, …, baseline in short slices, and
 * each scenario's slice is compared with the two baseline slices around it. The order of the scenarios
 * rotates from cycle to cycle; the published ratio is the median over cycles.
 *
 * Then pruning (bench/prune.ts): the library's prune rows/s against a raw pg loop of the same
 * statement, and claim latency during a prune against idle. Then re-drive throughput
 * (bench/replay.ts): the replay executor against a deliverOnce loop, at 50/s and 500/s. Then the
 * embedded database (bench/embedded.ts): HTTP single claims per second at 1 and 8 clients on a
 * server without DATABASE_URL, as a ratio to a server on PostgreSQL.
 *
 * `npm run bench` runs it with NODE_ENV=production, as `keyward start` runs: the library's rows and answers are
 * not shape-checked (lib/shape-checks.ts), so the library rows cost what they cost in production.
 *
 * Knobs (environment): BENCH_CYCLES (6), BENCH_SLICE_MS (250 for single claims; batches of 100 get
 * 1.5×, of 1000 3×, so that long requests still complete a few times), BENCH_WARM_MS (200),
 * BENCH_OUT (docs/benchmarks.md; "-" to skip writing), BENCH_PARTS ("claims,prune,partitions,audit,replay,pooler,embedded,payload";
 * the parts not run keep their section of the existing report), prune.ts's BENCH_PRUNE_* knobs,
 * partitions.ts's (partition mode: dropping a day, claims partitioned vs not, claims with 10M live keys),
 * audit.ts's BENCH_AUDIT_ROWS (10M) and BENCH_AUDIT_LOOKUPS (500), replay.ts's BENCH_REPLAY_SECONDS,
 * pooler.ts's BENCH_POOLER_CYCLES and BENCH_POOLER_SLICE_MS (prepared statements on/off, and PgBouncer),
 * embedded.ts's BENCH_EMBEDDED_CYCLES (5) and BENCH_EMBEDDED_SLICE_MS (1000).
 */
import { execSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { migrate } from "@/lib/db/migrate";
import { closeDb } from "@/lib/db/client";
import { loadEnv } from "@/lib/config/env";
import { createSource } from "@/lib/sources/sources";
import { createApiKey } from "@/lib/auth/api-keys";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { drive } from "./drive";
import { JsonClient } from "./http-client";
import { LeanJsonClient } from "./lean-client";
import { ensureBuild, startServer, type RunningServer } from "./server";
import { buildBlocks, claimQuery, newEventId, type BenchContext, type Block, type Cell } from "./scenarios";
import { eventsPerSec, median, rotate, summarise, type Paired, type RoundSample } from "./stats";
import { aimLines, costSplit, markdownReport, textTable, type Aim, type Machine, type Row } from "./report";
import { benchPruning, pruneMarkdown, pruneText, spliceSection, PRUNE_END, PRUNE_START } from "./prune";
import { benchPartitions, partitionsMarkdown, partitionsText, PARTITIONS_END, PARTITIONS_START } from "./partitions";
import { auditMarkdown, auditText, benchAudit, AUDIT_END, AUDIT_START } from "./audit";
import { benchReplay, replayMarkdown, replayText, REPLAY_END, REPLAY_START } from "./replay";
import { benchPooler, poolerMarkdown, poolerText, POOLER_END, POOLER_START } from "./pooler";
import { benchEmbedded, embeddedMarkdown, embeddedText, EMBEDDED_END, EMBEDDED_START } from "./embedded";
import { benchPayloadMemory, payloadMarkdown, payloadText, PAYLOAD_END, PAYLOAD_START } from "./payload-memory";
import { existsSync, readFileSync } from "node:fs";

import { cliPrincipal } from "@/lib/auth/principal";
import { createSourceRequest } from "@/lib/sources/schema";
import { parseInput } from "@/lib/http/validate";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(`npm run bench: claims (raw pg, library, HTTP), pruning, partition mode, audit search, replay,
prepared statements / PgBouncer and the embedded database, measured interleaved; prints the tables and
rewrites docs/benchmarks.md. Its own database on BENCH_DATABASE_URL's server (default the local PostgreSQL).

  BENCH_PARTS   which parts run (claims,prune,partitions,audit,replay,pooler,embedded,payload); the others keep
                their section of docs/benchmarks.md. A short run: BENCH_PARTS=replay BENCH_REPLAY_SECONDS=3
  BENCH_CYCLES (6)  BENCH_SLICE_MS (250)  BENCH_WARM_MS (200)  BENCH_OUT (docs/benchmarks.md; "-": don't write)
  each part's own knobs: the header of bench/<part>.ts`);
  process.exit(0);
}

const ACTOR = cliPrincipal();
const ROOT = path.resolve(__dirname, "..");
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

const knob = (name: string, def: number) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
};
const CYCLES = knob("BENCH_CYCLES", 6);
const SLICE_MS = knob("BENCH_SLICE_MS", 250);
const WARM_MS = knob("BENCH_WARM_MS", 200);
const OUT = process.env.BENCH_OUT ?? path.join(ROOT, "docs", "benchmarks.md");
const CONCURRENCY = [1, 8];
const BATCH_SIZES = [100, 1000];
const DUPLICATE_POOL = 20_000;
const ALL_PARTS = ["claims", "prune", "partitions", "audit", "replay", "pooler", "embedded", "payload"];
const PARTS = new Set((process.env.BENCH_PARTS ?? ALL_PARTS.join(",")).split(",").map((p) => p.trim()));
for (const p of PARTS) if (!ALL_PARTS.includes(p)) throw new Error(`BENCH_PARTS: unknown part "${p}" (${ALL_PARTS.join(", ")})`);

/** A hand-kept section (issue 15's before/after table) that every run carries over unchanged. */
const BEFORE_AFTER_START = "<!-- before-after: kept by hand, carried over by test/bench/run.ts -->";
const BEFORE_AFTER_END = "<!-- /before-after -->";
/** Issue 25's cost of saved results on the claim path (bench/saved-results.ts, run alone), kept by hand too. */
const SAVED_RESULTS_START = "<!-- saved-results: kept by hand from bench/saved-results.ts, carried over by bench/run.ts -->";
const SAVED_RESULTS_END = "<!-- /saved-results -->";

const cleanups: (() => Promise<unknown> | void)[] = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        console.error(`bench: cleanup step failed: ${(err as Error).message}`);
      }
    }
  })();
  return cleaning;
}

const t0 = performance.now();
const elapsed = () => `${((performance.now() - t0) / 1000).toFixed(0)} s`;
const log = (msg: string) => console.log(`bench [${elapsed()}] ${msg}`);

async function adminQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: SERVER_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function machine(pool: pg.Pool, server: string): Promise<Machine> {
  const { rows } = await pool.query<{ v: string; sc: string; sb: string; fs: string }>(
    `SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sc,
            current_setting('shared_buffers') AS sb, current_setting('fsync') AS fs`,
  );
  const cpus = os.cpus();
  let commit = "unknown";
  try {
    commit = execSync("git rev-parse --short HEAD", { cwd: ROOT, encoding: "utf8" }).trim();
  } catch {
    /* not a git checkout */
  }
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    cpu: cpus[0]?.model.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: os.totalmem() / 2 ** 30,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    postgres: rows[0].v,
    pgSettings: `synchronous_commit=${rows[0].sc}, fsync=${rows[0].fs}, shared_buffers=${rows[0].sb}`,
    loadAverage: os.loadavg().map((l) => l.toFixed(2)).join(", "),
    commit,
    server,
    build: statSync(path.join(ROOT, ".next", "BUILD_ID")).mtime.toISOString().replace(/\.\d+Z$/, "Z"),
  };
}

/**
 * Runs CYCLES cycles over all blocks; in each block: baseline, X1, baseline, X2, …, baseline, with the
 * scenarios in an order rotated by the cycle. Returns one summarised row per scenario.
 */
async function measure(
  blocks: Block[],
  run: (c: Cell, ms: number) => Promise<RoundSample>,
  sliceOf: (b: Block) => number,
): Promise<Row[]> {
  const baselineOf = (b: Block) => b.cells.find((c) => c.kind === "raw")!;
  const paired = new Map<Cell, Paired[]>();
  const baselineSlices = new Map<Block, RoundSample[]>(blocks.map((b) => [b, []]));
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    for (const b of blocks) {
      const base = baselineOf(b);
      const slices = baselineSlices.get(b)!;
      let before = await run(base, sliceOf(b));
      slices.push(before);
      for (const c of rotate(b.cells.filter((x) => x !== base), cycle)) {
        const sample = await run(c, sliceOf(b));
        const after = await run(base, sliceOf(b));
        slices.push(after);
        const around = (eventsPerSec(before) + eventsPerSec(after)) / 2;
        paired.set(c, [...(paired.get(c) ?? []), { sample, baselineEventsPerSec: around }]);
        before = after;
      }
    }
    const progress = blocks.find((b) => b.batch === 1 && b.clients === Math.max(...CONCURRENCY))!;
    const rate = median(baselineSlices.get(progress)!.map((x) => x.opsPerSec));
    log(`cycle ${cycle + 1}/${CYCLES} done (raw single claims at ${progress.clients} clients, median so far: ${Math.round(rate)}/s)`);
  }
  return blocks.flatMap((block) => {
    const base = baselineOf(block);
    const baseline = baselineSlices.get(block)!;
    const self = baseline.map((x) => ({ sample: x, baselineEventsPerSec: eventsPerSec(x) }));
    return block.cells.map((cell) => ({ block, cell, s: summarise(cell === base ? self : paired.get(cell)!, baseline) }));
  });
}

/** Both figures are ratios to the same (a) slices: their quotient compares the two servers directly. */
function redisAims(ratioOf: (kind: string, batch: number, clients: number) => number): Aim[] {
  const storm = ratioOf("httpStormRedis", 1, 8) / ratioOf("httpStorm", 1, 8);
  const first = ratioOf("httpRedis", 1, 8) / ratioOf("http", 1, 8);
  if (!Number.isFinite(storm)) return [];
  return [
    { text: "duplicate storm through HTTP with Redis ≥ 3× without (8 clients)", value: `${storm.toFixed(2)}×`, met: storm >= 3 },
    { text: "first claims through HTTP with Redis on ≥ 0.9× without (8 clients)", value: `${first.toFixed(2)}×`, met: first >= 0.9 },
  ];
}

async function redisReachable(url: string): Promise<boolean> {
  const { default: Redis } = await import("ioredis");
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  r.on("error", () => {});
  try {
    await r.connect();
    return (await r.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

function aimsOf(rows: Row[]): Aim[] {
  const ratioOf = (kind: string, batch: number, clients: number) =>
    rows.find((r) => r.cell.kind === kind && r.cell.batch === batch && r.cell.clients === clients)?.s.ratio.median ?? NaN;
  const lib = CONCURRENCY.map((n) => ratioOf("lib", 1, n));
  const httpSingle = ratioOf("http", 1, 8);
  // (m) is measured as a ratio to (a); the statement's own figure is (a) ÷ (m).
  const statement = [1, 100].map((b) => 1 / ratioOf("minimal", b, 8));
  return [
    {
      text: "the claim statement ≥ 0.7× the design's minimal claim (8 clients; (a) ÷ (m))",
      value: `${statement[0].toFixed(2)}× single, ${statement[1].toFixed(2)}× batches of 100`,
      met: statement[0] >= 0.7,
    },
    {
      text: "library ≥ 0.9× raw (single claims, 1 and 8 clients)",
      value: CONCURRENCY.map((n, i) => `${lib[i].toFixed(2)}× at ${n}`).join(", "),
      met: lib.every((r) => r >= 0.9),
    },
    { text: "HTTP single claims ≥ 0.5× raw at 8 clients", value: `${httpSingle.toFixed(2)}×`, met: httpSingle >= 0.5 },
    ...redisAims(ratioOf),
    ...CONCURRENCY.map((n) => {
      const r = ratioOf("http", 1000, n);
      return { text: `HTTP batch of 1000 ≥ 0.8× raw batch (${n} client${n > 1 ? "s" : ""})`, value: `${r.toFixed(2)}×`, met: r >= 0.8 };
    }),
  ];
}

async function main(): Promise<void> {
  // The HTTP scenarios serve the production build. BENCH_NO_BUILD=1 skips the staleness check: the claim
  // routes run from source through the fast path whatever the build (lib/server/fast-routes.ts).
  if (!process.env.BENCH_NO_BUILD && (PARTS.has("claims") || PARTS.has("audit") || PARTS.has("replay") || PARTS.has("embedded"))) ensureBuild();

  const dbName = `keyward_bench_${Date.now()}_${randomBytes(3).toString("hex")}`;
  await adminQuery(`CREATE DATABASE "${dbName}"`);
  cleanups.push(() => adminQuery(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`));
  const url = new URL(SERVER_URL);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  process.env.DATABASE_URL = databaseUrl; // the library's shared pool (lib/db/client.ts) opens this
  log(`database ${dbName} created; migrating`);
  await migrate(databaseUrl);

  const poolMax = loadEnv().KEYWARD_DB_POOL_MAX;
  const newPool = () => new pg.Pool({ connectionString: databaseUrl, max: poolMax, application_name: "keyward-bench-raw" });
  const rawPool = newPool();
  const controlPool = newPool();
  const extraPools = new Set<pg.Pool>();
  cleanups.push(() => Promise.all([rawPool, controlPool, ...extraPools].map((p) => p.end())));
  cleanups.push(async () => {
    await flushClaimCounts().catch(() => {});
    await closeDb();
  });

  // A Stripe-class source: 3 d retries + 1 d queue lag + 5 min skew + 3 d replay.
  const source = await createSource(parseInput(createSourceRequest, {
    name: "bench",
    retryWindowSeconds: 3 * 86400,
    queueLagSeconds: 86400,
    clockSkewSeconds: 300,
    replaySeconds: 3 * 86400,
  }), ACTOR);
  const apiKey = await createApiKey({ name: "bench", scopes: ["claims:write"] }, ACTOR);

  const claimsDoc = PARTS.has("claims")
    ? await benchClaims({ databaseUrl, rawPool, controlPool, newPool, extraPools, source, apiKey: apiKey.key, poolMax })
    : undefined;
  const when = () =>
    `${new Date().toISOString().replace(/\.\d+Z$/, "Z")} (commit ${commitOf()}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(", ")} at the end)`;
  const previous = OUT !== "-" && existsSync(OUT) ? readFileSync(OUT, "utf8") : "";
  // Parts not run keep their section of the existing report.
  let doc = claimsDoc ?? previous;
  if (claimsDoc !== undefined) {
    for (const [start, end] of [
      [PRUNE_START, PRUNE_END],
      [PARTITIONS_START, PARTITIONS_END],
      [AUDIT_START, AUDIT_END],
      [REPLAY_START, REPLAY_END],
      [POOLER_START, POOLER_END],
      [EMBEDDED_START, EMBEDDED_END],
      [PAYLOAD_START, PAYLOAD_END],
      [BEFORE_AFTER_START, BEFORE_AFTER_END],
      [SAVED_RESULTS_START, SAVED_RESULTS_END],
    ]) {
      const i = previous.indexOf(start);
      const j = previous.indexOf(end);
      if (i >= 0 && j > i) doc = spliceSection(doc, previous.slice(i, j + end.length), start, end);
    }
  }
  if (PARTS.has("prune")) {
    const setup = newPool();
    extraPools.add(setup);
    const pruning = await benchPruning(setup, databaseUrl, log);
    console.log(`\n${pruneText(pruning)}\nAims:\n  ${aimLines(pruning.aims).join("\n  ")}`);
    doc = spliceSection(doc, pruneMarkdown(pruning, when()));
  }
  if (PARTS.has("partitions")) {
    const r = await benchPartitions(SERVER_URL, log, cleanups);
    console.log(`\n${partitionsText(r)}`);
    doc = spliceSection(doc, partitionsMarkdown(r, when()), PARTITIONS_START, PARTITIONS_END);
  }
  if (PARTS.has("audit")) {
    const setup = newPool();
    extraPools.add(setup);
    const readKey = await createApiKey({ name: "bench-read", scopes: ["read"] }, ACTOR);
    const audit = await benchAudit(setup, databaseUrl, readKey.key, log);
    console.log(`\n${auditText(audit)}`);
    doc = spliceSection(doc, auditMarkdown(audit, when()), AUDIT_START, AUDIT_END);
  }
  if (PARTS.has("replay")) {
    const replay = await benchReplay(databaseUrl, log, cleanups);
    replay.when = `${replay.when}, commit ${commitOf()}`;
    console.log(`\n${replayText(replay)}`);
    doc = spliceSection(doc, replayMarkdown(replay), REPLAY_START, REPLAY_END);
  }
  if (PARTS.has("pooler")) {
    const pooler = await benchPooler(databaseUrl, source.name, poolMax, log, cleanups);
    if (pooler) {
      console.log(`\n${poolerText(pooler)}`);
      doc = spliceSection(doc, poolerMarkdown(pooler, when()), POOLER_START, POOLER_END);
    }
  }
  if (PARTS.has("embedded")) {
    const embedded = await benchEmbedded({ databaseUrl, source: source.name, apiKey: apiKey.key }, log, cleanups);
    console.log(`\n${embeddedText(embedded)}`);
    doc = spliceSection(doc, embeddedMarkdown(embedded, when()), EMBEDDED_START, EMBEDDED_END);
  }
  if (PARTS.has("payload")) {
    const payload = await benchPayloadMemory(log);
    console.log(`\n${payloadText(payload)}`);
    doc = spliceSection(doc, payloadMarkdown(payload, when()), PAYLOAD_START, PAYLOAD_END);
  }
  if (OUT !== "-") {
    writeFileSync(OUT, doc);
    log(`wrote ${path.relative(process.cwd(), OUT)} (parts: ${[...PARTS].join(", ")})`);
  }
}

function commitOf(): string {
  try {
    return execSync("git rev-parse --short HEAD", { cwd: ROOT, encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

/** The claim benchmark: the server, the interleaved measurement, the table. Returns the report's text. */
async function benchClaims(args: {
  databaseUrl: string;
  rawPool: pg.Pool;
  controlPool: pg.Pool;
  newPool: () => pg.Pool;
  extraPools: Set<pg.Pool>;
  source: { name: string; ttlSeconds: number };
  apiKey: string;
  poolMax: number;
}): Promise<string> {
  const { databaseUrl, rawPool, controlPool, newPool, extraPools, source, poolMax } = args;
  const apiKey = { key: args.apiKey };
  log("starting the server (node bin/keyward.cjs start --no-build)");
  let server: RunningServer | undefined;
  const serverStarting = startServer(databaseUrl).then((s) => {
    server = s;
    return s;
  });
  cleanups.push(async () => {
    const s = server ?? (await serverStarting.catch(() => undefined));
    await s?.stop();
  });
  // A second server with the Redis first line, on the machine's Redis (BENCH_REDIS_URL; its entries live in
  // a namespace of this benchmark database's own). Skipped when no Redis answers there.
  const redisUrl = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
  let redisServer: RunningServer | undefined;
  const redisStarting = (await redisReachable(redisUrl))
    ? startServer(databaseUrl, { KEYWARD_REDIS_URL: redisUrl }).then((s) => (redisServer = s))
    : Promise.resolve(undefined);
  cleanups.push(async () => {
    const s = redisServer ?? (await redisStarting.catch(() => undefined));
    await s?.stop();
  });

  // Ids for the duplicate scenarios, claimed through the same statement while the server starts.
  const claimedIds: string[] = [];
  for (let i = 0; i < DUPLICATE_POOL / 1000; i++) {
    const ids = Array.from({ length: 1000 }, newEventId);
    await rawPool.query(claimQuery(source.name, ids));
    claimedIds.push(...ids);
  }
  const { baseUrl, command: serverCommand } = await serverStarting;
  log(`server ready on ${baseUrl}`);
  const withRedis = await redisStarting;
  if (withRedis) log(`server with the Redis first line ready on ${withRedis.baseUrl}`);

  const clients = new Map<string, JsonClient | LeanJsonClient>();
  const client = (clientsCount: number, key: string, nodeHttp = false, target = baseUrl) => {
    const id = `${clientsCount}:${key}:${nodeHttp}:${target}`;
    let c = clients.get(id);
    if (!c) {
      const headers = { authorization: `Bearer ${key}` };
      c = nodeHttp ? new JsonClient(target, clientsCount, headers) : new LeanJsonClient(target, clientsCount, headers);
      clients.set(id, c);
    }
    return c;
  };
  cleanups.push(() => clients.forEach((c) => c.close()));

  const ctx: BenchContext = {
    source: source.name,
    ttlSeconds: source.ttlSeconds,
    rawPool,
    controlPool,
    newPool: () => {
      const p = newPool();
      extraPools.add(p);
      return p;
    },
    endPool: async (p) => {
      extraPools.delete(p);
      await p.end();
    },
    apiKey: apiKey.key,
    http: (n) => client(n, apiKey.key),
    httpBadKey: (n) => client(n, "not-a-keyward-key"),
    httpNode: (n) => client(n, apiKey.key, true),
    httpRedis: withRedis ? (n) => client(n, apiKey.key, false, withRedis.baseUrl) : undefined,
    claimedIds,
  };
  const blocks = buildBlocks(ctx, CONCURRENCY, BATCH_SIZES);
  const sliceOf = (b: Block) => SLICE_MS * (b.batch === 1 ? 1 : b.batch < 1000 ? 1.5 : 3);
  // Before each slice, one untimed request per client: pg pools close connections idle for 10 s (the
  // default idleTimeoutMillis, which lib/db/client.ts keeps), and a scenario runs again only after the
  // others, so without this each slice would start by opening connections to cold backends.
  const run = async (c: Cell, ms: number) => {
    await c.beforeSlice?.();
    await Promise.all(Array.from({ length: c.clients }, () => c.op()));
    return drive(c.op, c.clients, ms, c.batch);
  };

  log(`warming up ${blocks.reduce((n, b) => n + b.cells.length, 0)} scenarios`);
  for (const b of blocks) for (const c of b.cells) await run(c, WARM_MS);
  await rawPool.query("CHECKPOINT");

  const rows = await measure(blocks, run, sliceOf);
  const mainRows = rows.filter((r) => r.cell.table === "main");
  const driverRows = rows.filter(
    (r) => r.block.cells.some((c) => c.table === "driver") && (r.cell.table === "driver" || r.cell.kind === "raw" || r.cell.kind === "control"),
  );
  const split = rows.filter((r) => r.cell.batch === 1 && (r.cell.table === "split" || r.cell.kind === "http" || r.cell.kind === "raw"));
  const splitLines = Object.fromEntries(CONCURRENCY.map((n) => [n, costSplit(rows, n)]));

  const aims = aimsOf(rows);

  const mach = await machine(rawPool, serverCommand);
  const totalSeconds = Math.round((performance.now() - t0) / 1000);
  console.log(`\nKeyward claim benchmark — ${mach.date}; ${mach.cpu} × ${mach.cores}, PostgreSQL ${mach.postgres}, Node ${mach.node}`);
  console.log(`${CYCLES} cycles; each ratio is the median over cycles of (scenario ÷ the (a) slices just before and after it), [middle half of cycles]\n`);
  console.log(textTable(mainRows));
  console.log(`\nThe same statement and parameters through Prisma $queryRawUnsafe, unprepared, and on fresh connections:\n`);
  console.log(textTable(driverRows));
  console.log(`\nHTTP cost split:\n`);
  console.log(textTable(split, "req/s"));
  for (const n of CONCURRENCY) console.log(`\nat ${n} client${n > 1 ? "s" : ""}:\n  ${splitLines[n].join("\n  ")}`);
  console.log(`\nAims:\n  ${aimLines(aims).join("\n  ")}`);
  // The server prunes on its own schedule: it must be gone before the pruning part measures.
  await server?.stop();
  await redisServer?.stop();

  return markdownReport({
    machine: mach,
    config: { cycles: CYCLES, sliceMs: SLICE_MS, poolMax, totalSeconds },
    main: mainRows,
    driver: driverRows,
    split,
    splitLines,
    aims,
  });
}

let interrupted = false;
process.once("SIGINT", () => {
  interrupted = true;
  console.error("\nbench: interrupted; cleaning up");
  void cleanup().finally(() => process.exit(130));
});

main()
  .then(cleanup, async (err: unknown) => {
    if (interrupted) return; // the requests in flight failed because cleanup closed their pools
    console.error(`bench: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
    await cleanup();
  })
  .finally(() => log("done"));
