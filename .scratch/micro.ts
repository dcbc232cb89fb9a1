// Scratch: executor vs deliverOnce loop against a bare 200 server, in-process, no claim work.
import { randomBytes } from "node:crypto";
import nodeHttp from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
process.env.KEYWARD_REPLAY_WORKER = "0";
const SERVER_URL = "postgresql://postgres@127.0.0.1:5432/postgres";
async function main() {
  const name = `kw_micro_${randomBytes(3).toString("hex")}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = SERVER_URL.replace(/\/postgres$/, `/${name}`);
  process.env.DATABASE_URL = url;
  const { migrate } = await import("../lib/db/migrate");
  await migrate(url);
  const { cliPrincipal } = await import("../lib/auth/principal");
  const { createSource, updateSource } = await import("../lib/sources/sources");
  const { rotateSigningSecret } = await import("../lib/sources/signing-secret");
  const { recordDeadLetters } = await import("../lib/deadletters/intake");
  const { createPreflight } = await import("../lib/replay/preflight");
  const { startReplay, getReplay } = await import("../lib/replay/replays");
  const { startReplayWorker } = await import("../lib/replay/executor");
  const { deliverOnce } = await import("../lib/replay/deliver");
  const { RateLimiter } = await import("../lib/replay/rate-limiter");
  const { closeDb } = await import("../lib/db/client");
  const arrivals: number[] = [];
  const lat = Number(process.env.LAT ?? 0);
  const srv = nodeHttp.createServer((req, res) => { arrivals.push(performance.now()); req.resume(); req.on("end", () => setTimeout(() => res.writeHead(200).end("ok"), lat)); });
  srv.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const dest = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`;
  const A = cliPrincipal();
  const rate = Number(process.env.RATE ?? 500), conc = Number(process.env.CONC ?? 32), n = Number(process.env.N ?? 5000);
  const src = await createSource({ name: `m${randomBytes(3).toString("hex")}`, retryWindowSeconds: 86400, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0 }, A);
  await updateSource(src.name, { replayDestination: dest }, A);
  const secret = (await rotateSigningSecret(src.name, A)).secret;
  for (let i = 0; i < n; i += 500) {
    await recordDeadLetters({ items: Array.from({ length: Math.min(500, n - i) }, (_, j) => ({ source: src.name, eventId: `e${i + j}-${randomBytes(4).toString("hex")}`, eventType: "t", payload: { a: i + j }, error: "x" })) }, "m");
  }
  const base = async () => {
    const lim = new RateLimiter(rate); let next = 0; const t0 = performance.now();
    await Promise.all(Array.from({ length: conc }, async () => { for (;;) { const i = next++; if (i >= n) return; await lim.take(); await deliverOnce({ url: dest, id: `b${i}`, body: `{"a":${i}}`, secret, replayId: "b" }); } }));
    return n / ((performance.now() - t0) / 1000);
  };
  const b1 = await base();
  const pf = await createPreflight({ source: src.name }, A);
  const from = arrivals.length;
  const w = startReplayWorker({ pollMs: 500, log: (m) => console.error(m) });
  const t0 = performance.now();
  const { replayId } = await (async () => { const x = await startReplay({ preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: rate, concurrency: conc }, `k${randomBytes(4).toString("hex")}`, A); console.log("startReplay ms", (performance.now() - t0).toFixed(0)); return x; })();
  for (;;) { const { getReplaySummary } = await import("../lib/replay/replays"); const r = await getReplaySummary(replayId); if (r.status === "completed") break; await new Promise((x) => setTimeout(x, 50)); }
  const tEnd = performance.now();
  const ex = n / ((tEnd - t0) / 1000);
  const a = arrivals.slice(from);
  console.log(JSON.stringify({ firstArrivalMs: (a[0] - t0).toFixed(0), lastArrivalToDoneMs: (tEnd - a[a.length - 1]).toFixed(0), spanRate: ((a.length - 1) * 1000 / (a[a.length - 1] - a[0])).toFixed(1) }));
  const b2 = await base();
  console.log(JSON.stringify({ rate, conc, n, lat, baseline: [b1.toFixed(1), b2.toFixed(1)], executor: ex.toFixed(1), ratio: (ex / ((b1 + b2) / 2)).toFixed(3) }));
  await w.stop(); srv.closeAllConnections(); srv.close(); await closeDb();
  await admin.query(`DROP DATABASE "${name}" WITH (FORCE)`); await admin.end();
}
main().catch((e) => { console.error(e); process.exit(1); });
