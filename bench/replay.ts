/**
 * Re-drive throughput (`BENCH_PARTS=replay npm run bench`): the replay executor inside the real server
 * delivering dead letters to the local test receiver (test/setup/receiver.ts: signature check + a claim
 * through the server's claim API per event), at the default rate (50/s, concurrency 4) and at the maximum
 * (500/s, concurrency 32). Items/s achieved is compared with the configured rate and with a baseline:
 * lib/replay/deliver.ts's deliverOnce driven directly in a loop with the same RateLimiter, rate and
 * concurrency, no database, to the same receiver, so the difference is the executor's own overhead
 * (leasing, the key re-check, recording results: one statement per batch each, lib/replay/feed.ts). A
 * third run per rate sends the same loop to a server that answers 200 at once: what the machine's HTTP
 * path allows, whatever the receiver does; a fourth, the executor to that server (a second source): the
 * executor's own overhead without the receiver's claims, which the server running the executor also
 * answers, competing for the same cores.
 *
 * Each configuration runs baseline, executor, baseline; the executor is compared with the mean of the
 * two baselines around it. Every item is a fresh event (never processed), so each one costs the receiver
 * one claim. Knob: BENCH_REPLAY_SECONDS (10): items per run = rate × seconds (at most 5000, one preflight).
 */
import { randomBytes } from "node:crypto";
import nodeHttp from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import { createApiKey } from "@/lib/auth/api-keys";
import { cliPrincipal } from "@/lib/auth/principal";
import { createUser, generatePassword } from "@/lib/auth/users";
import { deliverOnce } from "@/lib/replay/deliver";
import { RateLimiter } from "@/lib/replay/rate-limiter";
import { createSource } from "@/lib/sources/sources";
import { startReceiver, type Receiver } from "@/test/setup/receiver";
import { startServer, type RunningServer } from "./server";
import { createSourceRequest } from "@/lib/sources/schema";
import { parseInput } from "@/lib/http/validate";

const ACTOR = cliPrincipal();
const SECONDS = Number(process.env.BENCH_REPLAY_SECONDS ?? 10);
if (!Number.isFinite(SECONDS) || SECONDS <= 0) throw new Error("BENCH_REPLAY_SECONDS must be a positive number");
const MAX_ITEMS = 5000;

export const CONFIGS = [
  { label: "default rate", rate: 50, concurrency: 4 },
  { label: "maximum rate", rate: 500, concurrency: 32 },
] as const;

/**
 * One timed run: `wallSeconds` from start (for the executor: the 202 of POST /api/v1/replays) to the last
 * result; `spanRate` from the receiver's first to last arrival; `startSeconds` the POST's own time (executor).
 */
export type Run = { items: number; delivered: number; wallSeconds: number; itemsPerSec: number; spanRate: number; startSeconds?: number };

export type ReplayBenchRow = {
  label: string;
  rate: number;
  concurrency: number;
  executor: Run;
  baselines: [Run, Run];
  /** deliverOnce to a bare 200 server (no signature check, no claim): the delivery path alone. */
  bare: Run;
  /** The executor to the same bare 200 server: its own overhead, without the receiver's claims competing. */
  executorBare: Run;
};

export type ReplayBenchResult = { rows: ReplayBenchRow[]; seconds: number; when: string };

type Ctx = { baseUrl: string; receiver: Receiver; source: string; secret: string; operatorKey: string; deadLetterKey: string };

/** `B`: the body the route answers (what this bench reads of it); not checked here, the tests check the routes. */
async function http<B = unknown>(baseUrl: string, method: string, path: string, o: { key?: string; cookie?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...o.headers };
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  if (o.cookie) {
    headers.cookie = o.cookie;
    headers.origin = baseUrl;
  }
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(baseUrl + path, { method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body) });
  const text = await res.text();
  let body: B | undefined = undefined;
  try {
    body = text ? (JSON.parse(text) as B) : undefined;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: body as B, text, headers: res.headers }; // expectStatus() runs before a body is read
}

function expectStatus(res: { status: number; text: string }, status: number, what: string): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
}

const newIds = (n: number) => Array.from({ length: n }, () => `bench-${randomBytes(8).toString("hex")}`);
const payloadOf = (id: string) => JSON.stringify({ type: "order.paid", id, amount: 4200 });

function spanRateOf(arrivals: number[], from: number): number {
  const a = arrivals.slice(from);
  if (a.length < 2) return 0;
  return ((a.length - 1) * 1000) / (a[a.length - 1] - a[0]);
}

/** A server answering 200 to everything, recording arrivals: the delivery path without the receiver's work. */
async function startBareServer(): Promise<{ url: string; arrivals: number[]; stop: () => Promise<void> }> {
  const arrivals: number[] = [];
  const srv = nodeHttp.createServer((req, res) => {
    arrivals.push(performance.now());
    req.resume();
    req.on("end", () => res.writeHead(200).end());
  });
  srv.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/`,
    arrivals,
    stop: async () => {
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    },
  };
}

/** deliverOnce in `concurrency` loops sharing one RateLimiter: the no-database baseline. */
async function baseline(
  ctx: Ctx,
  rate: number,
  concurrency: number,
  items: number,
  target: { url: string; arrivals: number[] } = { url: ctx.receiver.url, arrivals: ctx.receiver.arrivals },
): Promise<Run> {
  const ids = newIds(items);
  const limiter = new RateLimiter(rate);
  const from = target.arrivals.length;
  let next = 0;
  let delivered = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (;;) {
        const i = next++;
        if (i >= ids.length) return;
        await limiter.take();
        const r = await deliverOnce({ url: target.url, id: ids[i], body: payloadOf(ids[i]), secret: ctx.secret, replayId: "bench-baseline" });
        if (r.ok) delivered++;
      }
    }),
  );
  const wallSeconds = (performance.now() - t0) / 1000;
  return { items, delivered, wallSeconds, itemsPerSec: delivered / wallSeconds, spanRate: spanRateOf(target.arrivals, from) };
}

/** Dead-letters `items` fresh events, preflights them, and times the replay from POST to `completed`. */
async function executorRun(
  ctx: Ctx,
  rate: number,
  concurrency: number,
  items: number,
  target: { source: string; arrivals: number[] } = { source: ctx.source, arrivals: ctx.receiver.arrivals },
): Promise<Run> {
  const ids = newIds(items);
  for (let i = 0; i < ids.length; i += 500) {
    const chunk = ids.slice(i, i + 500).map((eventId) => ({
      source: target.source,
      eventId,
      eventType: "order.paid",
      payload: JSON.parse(payloadOf(eventId)),
      error: "consumer answered 500",
    }));
    const res = await http(ctx.baseUrl, "POST", "/api/v1/dead-letters/batch", { key: ctx.deadLetterKey, body: { items: chunk } });
    expectStatus(res, 200, "dead-letter batch");
  }
  const pf = await http<{ preflightId: string; counts: Record<string, number> }>(ctx.baseUrl, "POST", "/api/v1/replays/preflight", { key: ctx.operatorKey, body: { source: target.source } });
  expectStatus(pf, 201, "preflight");
  if (pf.body.counts.never_processed !== items) throw new Error(`preflight: expected ${items} never_processed, got ${JSON.stringify(pf.body.counts)}`);

  const from = target.arrivals.length;
  const posted = performance.now();
  const started = await http<{ replayId: string }>(ctx.baseUrl, "POST", "/api/v1/replays", {
    key: ctx.operatorKey,
    headers: { "idempotency-key": `bench-${randomBytes(8).toString("hex")}` },
    body: { preflightId: pf.body.preflightId, include: ["never_processed"], ratePerSecond: rate, concurrency },
  });
  expectStatus(started, 202, "start replay");
  // The executor's time starts when the replay exists (the 202); the start request's own transaction is
  // the API's cost, not the executor's, and is reported apart (startSeconds).
  const t0 = performance.now();
  const startSeconds = (t0 - posted) / 1000;
  const id = started.body.replayId as string;
  const bound = performance.now() + Math.max(120_000, (items / rate) * 5000);
  for (;;) {
    // The summary (the listing, one row), not GET /replays/{id} with its first 500 items and failures: the
    // poll runs on the server that runs the executor, and should cost it as little as possible.
    const list = await http<{ items: { id: string; status: string; counts: Record<string, number> }[] }>(ctx.baseUrl, "GET", `/api/v1/replays?source=${encodeURIComponent(target.source)}&limit=1`, { key: ctx.operatorKey });
    expectStatus(list, 200, "replay progress");
    const r = { body: list.body.items[0] };
    if (r.body?.id !== id) throw new Error(`replay ${id}: the listing answered ${JSON.stringify(list.body).slice(0, 200)}`);
    if (r.body.status === "completed") {
      const wallSeconds = (performance.now() - t0) / 1000;
      const delivered = r.body.counts.delivered as number;
      if (delivered !== items) throw new Error(`replay ${id}: ${delivered} of ${items} delivered: ${JSON.stringify(r.body.counts)}`);
      return { items, delivered, wallSeconds, itemsPerSec: delivered / wallSeconds, spanRate: spanRateOf(target.arrivals, from), startSeconds };
    }
    if (r.body.status !== "running") throw new Error(`replay ${id} ended ${r.body.status}`);
    if (performance.now() > bound) throw new Error(`replay ${id} did not complete: ${JSON.stringify(r.body.counts)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

export async function benchReplay(databaseUrl: string, log: (msg: string) => void, cleanups: (() => Promise<unknown> | void)[]): Promise<ReplayBenchResult> {
  const t0 = performance.now();
  const loadAtStart = os.loadavg().map((l) => l.toFixed(2)).join(", ");
  const source = await createSource(
    parseInput(createSourceRequest, { name: `bench-replay-${randomBytes(3).toString("hex")}`, retryWindowSeconds: 86400, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0 }),
    ACTOR,
  );
  const claimsKey = await createApiKey({ name: "bench-replay-receiver", scopes: ["claims:write"] }, ACTOR);
  const operatorKey = await createApiKey({ name: "bench-replay-operator", scopes: ["operator"] }, ACTOR);
  const deadLetterKey = await createApiKey({ name: "bench-replay-intake", scopes: ["deadletters:write"] }, ACTOR);
  const adminName = `bench-admin-${randomBytes(3).toString("hex")}`;
  const password = generatePassword();
  await createUser({ username: adminName, role: "admin", password }, ACTOR);

  log("replay: starting the server");
  const server: RunningServer = await startServer(databaseUrl);
  cleanups.push(() => server.stop());
  const baseUrl = server.baseUrl;

  const session = await http(baseUrl, "POST", "/api/v1/session", { body: { username: adminName, password }, headers: { origin: baseUrl } });
  expectStatus(session, 200, "admin sign-in");
  const cookie = session.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");

  const receiver = await startReceiver({ keywardUrl: baseUrl, apiKey: claimsKey.key, source: source.name });
  cleanups.push(() => receiver.stop());
  const patched = await http(baseUrl, "PATCH", `/api/v1/sources/${source.name}`, { cookie, body: { replayDestination: receiver.url } });
  expectStatus(patched, 200, "set replay destination");
  const rotated = await http<{ secret: string }>(baseUrl, "POST", `/api/v1/sources/${source.name}/signing-secret`, { cookie });
  expectStatus(rotated, 201, "signing secret");
  receiver.setSecret(rotated.body.secret);
  const ctx: Ctx = { baseUrl, receiver, source: source.name, secret: rotated.body.secret, operatorKey: operatorKey.key, deadLetterKey: deadLetterKey.key };

  const bareServer = await startBareServer();
  cleanups.push(() => bareServer.stop());
  // A second source replaying to the bare server: the executor without the receiver's claims.
  const bareSource = (
    await createSource(
      parseInput(createSourceRequest, { name: `bench-replay-bare-${randomBytes(3).toString("hex")}`, retryWindowSeconds: 86400, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0 }),
      ACTOR,
    )
  ).name;
  expectStatus(await http(baseUrl, "PATCH", `/api/v1/sources/${bareSource}`, { cookie, body: { replayDestination: bareServer.url } }), 200, "bare destination");
  expectStatus(await http(baseUrl, "POST", `/api/v1/sources/${bareSource}/signing-secret`, { cookie }), 201, "bare signing secret");

  // Warm-up: the server's first requests compile and connect.
  await baseline(ctx, 50, 4, 20);

  const rows: ReplayBenchRow[] = [];
  for (const c of CONFIGS) {
    const items = Math.min(MAX_ITEMS, Math.round(c.rate * SECONDS));
    log(`replay: ${c.label} (${c.rate}/s, concurrency ${c.concurrency}), ${items} items: baseline`);
    const b1 = await baseline(ctx, c.rate, c.concurrency, items);
    log(`replay: ${c.label}: executor`);
    const ex = await executorRun(ctx, c.rate, c.concurrency, items);
    log(`replay: ${c.label}: baseline again`);
    const b2 = await baseline(ctx, c.rate, c.concurrency, items);
    log(`replay: ${c.label}: deliverOnce to a bare 200 server`);
    const bare = await baseline(ctx, c.rate, c.concurrency, items, bareServer);
    log(`replay: ${c.label}: executor to the bare 200 server`);
    const executorBare = await executorRun(ctx, c.rate, c.concurrency, items, { source: bareSource, arrivals: bareServer.arrivals });
    rows.push({ label: c.label, rate: c.rate, concurrency: c.concurrency, executor: ex, baselines: [b1, b2], bare, executorBare });
  }
  const bad = receiver.snapshot();
  if (bad.badSignatures || bad.claimErrors || receiver.processedTwice().length) {
    throw new Error(`receiver saw bad signatures ${bad.badSignatures}, claim errors ${bad.claimErrors}, double processing ${receiver.processedTwice().length}`);
  }
  await server.stop();
  const when = `${new Date().toISOString().replace(/\.\d+Z$/, "Z")} on ${os.cpus().length} cores (load average ${loadAtStart} at the start, ${os.loadavg().map((l) => l.toFixed(2)).join(", ")} at the end)`;
  return { rows, seconds: Math.round((performance.now() - t0) / 1000), when };
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const meanRate = (b: [Run, Run], k: "itemsPerSec" | "spanRate") => (b[0][k] + b[1][k]) / 2;

export function replayText(r: ReplayBenchResult): string {
  return [
    "Re-drive throughput (items/s; executor vs the mean of the baselines around it):",
    ...r.rows.map((row) => {
      const base = meanRate(row.baselines, "itemsPerSec");
      return (
        `  ${row.label} ${row.rate}/s × ${row.concurrency}, ${row.executor.items} items: executor ${row.executor.itemsPerSec.toFixed(1)}/s ` +
        `(${((row.executor.itemsPerSec / row.rate) * 100).toFixed(0)}% of the rate, delivery span ${row.executor.spanRate.toFixed(1)}/s); ` +
        `baseline ${base.toFixed(1)}/s (${row.baselines.map((b) => b.itemsPerSec.toFixed(1)).join(", ")}); executor ÷ baseline ${(row.executor.itemsPerSec / base).toFixed(2)}× ` +
        `(by arrivals ${(row.executor.spanRate / meanRate(row.baselines, "spanRate")).toFixed(2)}×; the start request took ${(row.executor.startSeconds ?? 0).toFixed(2)} s); ` +
        `deliverOnce to a bare 200 server ${row.bare.itemsPerSec.toFixed(1)}/s, the executor to it ${row.executorBare.itemsPerSec.toFixed(1)}/s ` +
        `(${(row.executorBare.itemsPerSec / row.bare.itemsPerSec).toFixed(2)}×)`
      );
    }),
  ].join("\n");
}

export const REPLAY_START = "<!-- replay: written by bench/replay.ts -->";
export const REPLAY_END = "<!-- /replay -->";

export function replayMarkdown(r: ReplayBenchResult): string {
  const rows = r.rows.flatMap((row) => {
    const base = meanRate(row.baselines, "itemsPerSec");
    const baseSpan = meanRate(row.baselines, "spanRate");
    return [
      `| **executor** (${row.label}) | ${row.rate} | ${row.concurrency} | ${int(row.executor.items)} | ${row.executor.itemsPerSec.toFixed(1)} | ${((row.executor.itemsPerSec / row.rate) * 100).toFixed(0)}% | ${row.executor.spanRate.toFixed(1)} | ${(row.executor.itemsPerSec / base).toFixed(2)}× | ${(row.executor.spanRate / baseSpan).toFixed(2)}× |`,
      `| baseline: deliverOnce loop, no DB | ${row.rate} | ${row.concurrency} | ${int(row.baselines[0].items)} ×2 | ${base.toFixed(1)} (${row.baselines.map((b) => b.itemsPerSec.toFixed(1)).join(", ")}) | ${((base / row.rate) * 100).toFixed(0)}% | ${baseSpan.toFixed(1)} | 1.00× | 1.00× |`,
      `| deliverOnce loop to a bare 200 server (no receiver work) | ${row.rate} | ${row.concurrency} | ${int(row.bare.items)} | ${row.bare.itemsPerSec.toFixed(1)} | ${((row.bare.itemsPerSec / row.rate) * 100).toFixed(0)}% | ${row.bare.spanRate.toFixed(1)} | – | – |`,
      `| executor to the same bare 200 server | ${row.rate} | ${row.concurrency} | ${int(row.executorBare.items)} | ${row.executorBare.itemsPerSec.toFixed(1)} | ${((row.executorBare.itemsPerSec / row.rate) * 100).toFixed(0)}% | ${row.executorBare.spanRate.toFixed(1)} | ${(row.executorBare.itemsPerSec / row.bare.itemsPerSec).toFixed(2)}× of the loop to it | ${(row.executorBare.spanRate / row.bare.spanRate).toFixed(2)}× |`,
    ];
  });
  return `${REPLAY_START}
## Re-drive throughput

Measured ${r.when}; this part took ${r.seconds} s (\`BENCH_PARTS=replay npm run bench\` reruns only it).

| run | rate/s | concurrency | items | items/s achieved | of the rate | receiver arrivals/s | vs baseline | vs baseline, by arrivals |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join("\n")}

The executor inside the real server (\`node bin/keyward.cjs start --no-build\`) re-drives freshly
dead-lettered, never-processed events to the local test receiver (test/setup/receiver.ts), which verifies
each Standard Webhooks signature and claims the event through the same server's claim API before
answering 200. "items/s achieved" is items ÷ the time from the \`202\` of \`POST /api/v1/replays\` (the
replay exists; the start request's own transaction took ${r.rows.map((row) => `${(row.executor.startSeconds ?? 0).toFixed(2)} s`).join(" and ")})
to the replay reading \`completed\` (its summary polled every 50 ms, so it includes the executor picking the replay up and
recording the last result); "receiver arrivals/s" is (arrivals − 1) ÷ the time from the receiver's first to
its last request, and "by arrivals" compares those (the steady pace, without start and end).
The baseline is \`deliverOnce\` from lib/replay/deliver.ts in \`concurrency\` loops sharing one
\`RateLimiter\` at the same rate, to the same receiver, without any database work of its own; it runs
right before and right after the executor, and the ratio is to their mean. The last two rows of each rate
send the same loop, then the executor, to a server that answers 200 at once (no signature check, no
claim): what this machine's HTTP path allows whatever the receiver does, and the executor's own overhead
without the receiver's claims (which the server running the executor also answers: with the receiver,
the executor's sends and those claims share the server's event loop and the machine's cores). Rate limiters admit one
request at the start and then \`rate\` per second (burst: 100 ms worth), so a run of rate × ${SECONDS} s items
needs just under ${SECONDS} s at best.
${reading(r)}
${REPLAY_END}
`;
}

/** One sentence per configuration on what limited it, from the figures themselves. */
function reading(r: ReplayBenchResult): string {
  const lines = r.rows.map((row) => {
    const base = meanRate(row.baselines, "itemsPerSec");
    const ex = row.executor.itemsPerSec;
    const baseShort = base < row.rate * 0.9;
    const exShort = ex < row.rate * 0.9;
    if (!exShort) return `- ${row.label}: the executor held the configured ${row.rate}/s (${ex.toFixed(1)}/s).`;
    const bareNote =
      row.bare.itemsPerSec < row.rate * 0.9
        ? ` Even the bare 200 server got only ${row.bare.itemsPerSec.toFixed(1)}/s: the machine's HTTP path was saturated.`
        : ` The bare 200 server got ${row.bare.itemsPerSec.toFixed(1)}/s, so the limiter and deliverOnce keep up with the rate.`;
    if (baseShort)
      return (
        `- ${row.label}: the baseline, too, fell short of ${row.rate}/s (${base.toFixed(1)}/s): the receiver's path (one claim per event over ` +
        `HTTP to the same server) and the machine, not the rate limiter, set the pace; the executor reached ${(ex / base).toFixed(2)}× of it, ` +
        `its own database work (batched lease, key re-check and results) competing for the same cores.${bareNote}`
      );
    return `- ${row.label}: the baseline held ${row.rate}/s but the executor reached ${ex.toFixed(1)}/s: its database work (batched lease, key re-check and results) is the limit here.`;
  });
  return `\n${lines.join("\n")}`;
}

/** Puts the replay section into an existing report: replaces the previous one, or appends it. */
export function spliceReplaySection(doc: string, section: string): string {
  const i = doc.indexOf(REPLAY_START);
  const j = doc.indexOf(REPLAY_END);
  if (i >= 0 && j > i) return doc.slice(0, i) + section.trimEnd() + doc.slice(j + REPLAY_END.length);
  return `${doc.trimEnd()}\n\n${section}`;
}
