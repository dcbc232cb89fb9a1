/**
 * Where a duplicate storm's CPU goes, with and without the Redis first line (issue 15 §3): a diagnostic
 * beside `npm run bench`, not part of it. Run: `npx tsx --require ./bin/outside-next.cjs bench/redis-split.ts`.
 *
 * Two `keyward start` servers on one fresh database, one with KEYWARD_REDIS_URL (the machine's Redis,
 * BENCH_REDIS_URL); the bench's lean HTTP client drives, at 8 clients (SPLIT_CLIENTS), first claims and a
 * duplicate storm (each event sent 10×, as the bench's storm rows) against each, slices interleaved,
 * SPLIT_CYCLES (7) × SPLIT_SLICE_MS (1500). Per slice it reads the CPU time (utime + stime, /proc/<pid>/stat)
 * of the server process, of the database's backends and of redis-server, and divides by the requests
 * answered: the CPU each request costs each process. Prints medians, and the throughput ratios Redis on ÷ off
 * (median of the per-cycle ratios).
 *
 * Why: throughput on a 2-core machine shared by the load client, the server, PostgreSQL and Redis is bounded
 * by the CPU a request costs all of them together; this shows which part Redis removes (PostgreSQL's) and
 * which it cannot (the HTTP server's).
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";
import { cliPrincipal } from "@/lib/auth/principal";
import { createApiKey } from "@/lib/auth/api-keys";
import { closeDb } from "@/lib/db/client";
import { migrate } from "@/lib/db/migrate";
import { parseInput } from "@/lib/http/validate";
import { createSource } from "@/lib/sources/sources";
import { createSourceRequest } from "@/lib/sources/schema";
import { drive } from "./drive";
import { LeanJsonClient } from "./lean-client";
import { startServer } from "./server";
import { median } from "./stats";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const CLIENTS = Number(process.env.SPLIT_CLIENTS ?? 8);
const SLICE_MS = Number(process.env.SPLIT_SLICE_MS ?? 1500);
const CYCLES = Number(process.env.SPLIT_CYCLES ?? 7);
const STORM = 10;
const TICK_US = 1_000_000 / 100; // USER_HZ

/** utime + stime of a process, in clock ticks (0 once it is gone). */
function cpuTicks(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

const redisServerPids = () =>
  readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, "utf8").trim() === "redis-server";
      } catch {
        return false;
      }
    })
    .map(Number);

async function main(): Promise<void> {
  const admin = new pg.Pool({ connectionString: SERVER_URL, max: 1 });
  const dbName = `keyward_split_${Date.now()}`;
  await admin.query(`CREATE DATABASE "${dbName}"`);
  const url = new URL(SERVER_URL);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  process.env.DATABASE_URL = databaseUrl;
  const servers: { stop: () => Promise<void> }[] = [];
  try {
    await migrate(databaseUrl);
    const actor = cliPrincipal();
    await createSource(
      parseInput(createSourceRequest, { name: "bench", retryWindowSeconds: 3 * 86400, queueLagSeconds: 86400, clockSkewSeconds: 300, replaySeconds: 3 * 86400 }),
      actor,
    );
    const { key } = await createApiKey({ name: "bench", scopes: ["claims:write"] }, actor);
    const plain = await startServer(databaseUrl);
    servers.push(plain);
    const withRedis = await startServer(databaseUrl, { KEYWARD_REDIS_URL: REDIS_URL });
    servers.push(withRedis);
    const headers = { authorization: `Bearer ${key}` };
    const clients = { off: new LeanJsonClient(plain.baseUrl, CLIENTS, headers), on: new LeanJsonClient(withRedis.baseUrl, CLIENTS, headers) };
    const post = async (c: LeanJsonClient, eventId: string, ok: number[]) => {
      const r = await c.post("/api/v1/claims", JSON.stringify({ source: "bench", eventId, eventType: "t" }));
      if (!ok.includes(r.status)) throw new Error(`POST /api/v1/claims: ${r.status}`);
    };
    const first = (c: LeanJsonClient) => () => post(c, randomUUID(), [201]);
    const storm = (c: LeanJsonClient) => {
      const senders = Array.from({ length: CLIENTS }, () => ({ id: "", sent: STORM }));
      let next = 0;
      return () => {
        const s = senders[next++ % senders.length];
        if (s.sent === STORM) Object.assign(s, { id: randomUUID(), sent: 0 });
        s.sent++;
        return post(c, s.id, [200, 201]);
      };
    };
    const scenarios = [
      { name: "first claims, Redis off", pid: plain.pid, op: first(clients.off) },
      { name: "first claims, Redis on", pid: withRedis.pid, op: first(clients.on) },
      { name: "storm, Redis off", pid: plain.pid, op: storm(clients.off) },
      { name: "storm, Redis on", pid: withRedis.pid, op: storm(clients.on) },
    ];
    for (const s of scenarios) await drive(s.op, CLIENTS, 300, 1);
    const rows = scenarios.map(() => ({ perSec: [] as number[], server: [] as number[], pg: [] as number[], redis: [] as number[] }));
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      for (const [i, s] of scenarios.entries()) {
        const backends = (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1", [dbName])).rows.map((r) => r.pid);
        const redisPids = redisServerPids();
        const sum = (pids: number[]) => pids.reduce((n, p) => n + cpuTicks(p), 0);
        const before = { server: cpuTicks(s.pid), pg: sum(backends), redis: sum(redisPids) };
        const sample = await drive(s.op, CLIENTS, SLICE_MS, 1);
        const perRequest = (ticks: number) => (ticks * TICK_US) / sample.ops;
        rows[i].perSec.push(sample.opsPerSec);
        rows[i].server.push(perRequest(cpuTicks(s.pid) - before.server));
        rows[i].pg.push(perRequest(sum(backends) - before.pg));
        rows[i].redis.push(perRequest(sum(redisPids) - before.redis));
      }
    }
    console.log(`${CLIENTS} clients, ${CYCLES} cycles of ${SLICE_MS} ms; CPU µs per request (median)`);
    console.log("| scenario | requests/s | server | PostgreSQL | Redis | all three |");
    console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
    for (const [i, s] of scenarios.entries()) {
      const r = rows[i];
      const [server, db, redis] = [median(r.server), median(r.pg), median(r.redis)];
      console.log(`| ${s.name} | ${Math.round(median(r.perSec))} | ${Math.round(server)} | ${Math.round(db)} | ${Math.round(redis)} | ${Math.round(server + db + redis)} |`);
    }
    const ratio = (on: number, off: number) => median(rows[on].perSec.map((x, c) => x / rows[off].perSec[c])).toFixed(2);
    console.log(`\nRedis on ÷ off: first claims ${ratio(1, 0)}×, storm ${ratio(3, 2)}×`);
    clients.off.close();
    clients.on.close();
  } finally {
    for (const s of servers) await s.stop();
    await closeDb();
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
