/**
 * The release race of issue 22, as a harness for the Redis fault matrix (test/claims/redis-faults.system.test.ts):
 * two real servers sharing one Redis, claims and duplicates on both, releases
 * racing duplicates, and an oracle that reads PostgreSQL (the truth) before every check claim.
 *
 * A round, on a lane of its own with `perRound` fresh keys:
 *   1. claim the keys on A (each `claimed`), then duplicates on B and A (entries get written to Redis);
 *   2. the race: every key released (on A or B) while duplicates of them arrive on both servers;
 *   3. quiet (nothing else touches these keys): read the rows from PostgreSQL, then claim on B; read
 *      again, then claim on A. Where PostgreSQL holds no row, the only right answer is `claimed`; where it
 *      holds one, `duplicate` with that row's first claim time. A `duplicate` for a key PostgreSQL does not
 *      hold (or for an older claim of it) is a false duplicate: the failure issue 22 is about.
 * At the end every key of the scenario is checked once more the same way (a late entry write that slipped
 * in after its round would show there).
 */
import { vi } from "vitest";
import { call, type HttpResult, type TestServer } from "./auth";
import { sql, uniq } from "./db";
import { timePasses } from "./time";

export type Pair = { a: TestServer; b: TestServer; key: string; source: string; metricsToken: string };

export type Tally = {
  races: number;
  checks: number;
  falseDuplicates: string[];
  wrong: string[];
  /** The slowest claim request (ms): bounded by the Redis timeout plus the PostgreSQL claim. */
  slowestClaimMs: number;
  /** Every claim request's time (ms), for the scenario's report. */
  claimMs: number[];
  hits: number;
  stale: number;
  errors: number;
  /** Releases that could not reach Redis and moved the namespace instead. */
  moves: number;
  /** Entries written to Redis. */
  writes: number;
  /** Requests (releases and claims) answered 503 and retried. */
  retried503: number;
};

/**
 * How long a request answered 503 is sent again, and how often. A 503 says PostgreSQL had no connection for it
 * in time: the server's pool was busy (releases hold theirs through INVALIDATE's timeout and a namespace move
 * while Redis cannot be reached), or PostgreSQL itself had none left (53300: max_connections, shared with every
 * other test process on the machine). Either ends when connections come free, which the request itself is the
 * only probe of.
 */
const RETRY_503 = { timeout: 30_000, interval: 200 };

/**
 * `call`, sent again once when the connection it went out on was closed under it ("other side closed": a
 * kept-alive connection the server closed after its idle timeout while the request was being sent, which a
 * loaded machine makes likely). Such a request never reached the handler.
 */
async function send(...args: Parameters<typeof call>): Promise<HttpResult> {
  try {
    return await call(...args);
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    if (code !== "UND_ERR_SOCKET" && code !== "ECONNRESET") throw err;
    return call(...args);
  }
}

type Result = { eventId: string; outcome: string; firstSeenAt?: string; claimToken?: string };

/**
 * The server's keyward_redis_lookups_total, by result. /metrics reads PostgreSQL too: while that answers 503 (no
 * connection in time, RETRY_503) it is asked again, so a count is never read as missing.
 */
export async function redisLookups(server: TestServer, token: string): Promise<Record<string, number>> {
  const text = await vi.waitFor(async () => {
    const res = await fetch(`${server.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${server.baseUrl}/metrics answered ${res.status}: ${body.slice(0, 300)}`);
    return body;
  }, RETRY_503);
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^keyward_redis_lookups_total\{result="(\w+)"\} (\S+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

export async function releaseRaces(
  p: Pair,
  o: { races: number; lanes?: number; perRound?: number; label: string },
  fault?: (done: () => boolean) => Promise<void>,
): Promise<Tally> {
  const lanes = o.lanes ?? 3;
  const perRound = o.perRound ?? 8;
  const tally: Tally = { races: 0, checks: 0, falseDuplicates: [], wrong: [], slowestClaimMs: 0, claimMs: [], hits: 0, stale: 0, errors: 0, moves: 0, writes: 0, retried503: 0 };
  const all: string[] = [];
  const before = await Promise.all([redisLookups(p.a, p.metricsToken), redisLookups(p.b, p.metricsToken)]);

  /**
   * A request, sent again while it is answered 503 (RETRY_503: PostgreSQL had no connection for it in time, an
   * overloaded machine, never Redis), as a client retries; each retry counted. Its last answer otherwise, a 503
   * included once RETRY_503 is over.
   */
  const until503Passes = async (attempt: () => Promise<HttpResult>): Promise<HttpResult> => {
    let last: HttpResult | undefined;
    let failure: { err: unknown } | undefined;
    const passed = vi.waitFor(async () => {
      if (last) tally.retried503++;
      try {
        last = await attempt();
      } catch (err) {
        failure = { err }; // not a 503: not retried
        return;
      }
      if (last.status === 503) throw new Error(`answered 503: ${last.text.slice(0, 300)}`);
    }, RETRY_503);
    await passed.catch(() => {}); // RETRY_503 over: the last answer is the 503
    if (failure) throw failure.err;
    if (!last) throw new Error(`${o.label}: no answer within ${RETRY_503.timeout} ms`);
    return last;
  };
  /** A batch claim (503s retried: until503Passes). Each attempt is timed on its own. */
  const claim = async (server: TestServer, ids: string[]): Promise<Result[]> => {
    const r = await until503Passes(async () => {
      const t0 = performance.now();
      const answer = await send(server.baseUrl, "POST", "/api/v1/claims/batch", {
        key: p.key,
        body: { source: p.source, events: ids.map((eventId) => ({ eventId, eventType: "race" })) },
      });
      const ms = performance.now() - t0;
      tally.claimMs.push(ms);
      tally.slowestClaimMs = Math.max(tally.slowestClaimMs, ms);
      return answer;
    });
    if (r.status !== 200) throw new Error(`${o.label}: batch claim answered ${r.status}: ${r.text.slice(0, 300)}`);
    return r.body.results as Result[];
  };
  /**
   * A release (503s retried: until503Passes; while Redis is unreachable every release holds its pooled
   * connection through INVALIDATE's timeout and a namespace move).
   */
  const release = (server: TestServer, eventId: string, claimToken?: string) =>
    until503Passes(() => send(server.baseUrl, "POST", "/api/v1/claims/release", { key: p.key, body: { source: p.source, eventId, claimToken } }));
  const truth = async (ids: string[]) => {
    const rows = await sql<{ event_id: string; received_at: Date }>(
      "SELECT event_id, received_at FROM dedup_keys WHERE source = $1 AND event_id = ANY($2) AND expires_at > now()",
      [p.source, ids],
    );
    return new Map(rows.map((r) => [r.event_id, r.received_at.toISOString()]));
  };
  /** The oracle, then the check claim: every answer must agree with what PostgreSQL held. */
  const check = async (server: TestServer, ids: string[], where: string) => {
    const held = await truth(ids);
    const results = await claim(server, ids);
    results.forEach((r, i) => {
      const id = ids[i];
      const row = held.get(id);
      tally.checks++;
      if (!row) {
        if (r.outcome === "duplicate") tally.falseDuplicates.push(`${where} ${id}: duplicate (first seen ${r.firstSeenAt}) but PostgreSQL holds no row`);
        else if (r.outcome !== "claimed") tally.wrong.push(`${where} ${id}: ${r.outcome} for a key PostgreSQL does not hold`);
      } else if (r.outcome !== "duplicate") {
        tally.wrong.push(`${where} ${id}: ${r.outcome} for a key PostgreSQL holds`);
      } else if (r.firstSeenAt !== row) {
        tally.falseDuplicates.push(`${where} ${id}: duplicate of the claim first seen ${r.firstSeenAt}, PostgreSQL holds one first seen ${row}`);
      }
    });
  };

  let stop = false;
  const faulting = fault?.(() => stop);
  faulting?.catch(() => {}); // awaited after the races: its failure fails the scenario then, not the process now
  const lane = async (n: number) => {
    for (let round = 0; tally.races < o.races; round++) {
      const ids = Array.from({ length: perRound }, () => uniq(`${o.label}-${n}`));
      all.push(...ids);
      const first = await claim(p.a, ids);
      const tokens = new Map(first.map((r) => [r.eventId, r.claimToken]));
      for (const r of first) if (r.outcome !== "claimed") tally.wrong.push(`${o.label} ${r.eventId}: first claim answered ${r.outcome}`);
      await Promise.all([claim(p.b, ids), claim(p.a, ids)]);
      // Every other round gives the entry writes a head start (releases then mostly race Redis's answers); the
      // others race the entry writes of the duplicates PostgreSQL just answered. Either is checked the same way.
      if (round % 2 === 0) await timePasses(15, "the race's shape: releases 15 ms after the duplicates' answers, not at once");
      const releases = ids.map((id, i) => release(i % 2 ? p.b : p.a, id, tokens.get(id)));
      const jitter = () => timePasses(Math.random() * 3, "the race's shape: each racing duplicate 0–3 ms after the releases");
      const racing = Promise.all([jitter().then(() => claim(p.b, ids)), jitter().then(() => claim(p.a, ids))]);
      racing.catch(() => {}); // awaited below: a failure then fails the lane, not the process meanwhile
      const answered = await Promise.all(releases);
      for (const [i, r] of answered.entries()) {
        // A racing duplicate cannot take the key, so every release finds it (200); a 503 would be a fault.
        if (r.status !== 200) {
          // A 500 says only "see the server log": the log's last error lines go with it, so a repeat says why.
          const server = i % 2 ? p.b : p.a;
          const log = r.status >= 500 ? server.server.output().split("\n").filter((l) => /error/i.test(l)).slice(-5).join(" | ").slice(-1500) : "";
          tally.wrong.push(`${o.label} ${ids[i]}: release answered ${r.status} ${r.text.slice(0, 200)}${log ? `; server log: ${log}` : ""}`);
        }
      }
      await racing;
      tally.races += ids.length;
      await check(p.b, ids, `${o.label} round ${round} B`);
      await check(p.a, ids, `${o.label} round ${round} A`);
    }
  };
  let settled: PromiseSettledResult<void>[];
  try {
    settled = await Promise.allSettled(Array.from({ length: lanes }, (_, n) => lane(n)));
  } finally {
    stop = true;
    await faulting;
  }
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failure) throw failure.reason;
  // Late writes that slipped in after their round would show now.
  for (let i = 0; i < all.length; i += 500) {
    const ids = all.slice(i, i + 500);
    await check(p.b, ids, `${o.label} final B`);
    await check(p.a, ids, `${o.label} final A`);
  }
  const after = await Promise.all([redisLookups(p.a, p.metricsToken), redisLookups(p.b, p.metricsToken)]);
  const delta = (k: string) => after.reduce((n, m, i) => n + (m[k] ?? 0) - (before[i][k] ?? 0), 0);
  tally.hits = delta("hit");
  tally.stale = delta("stale");
  tally.errors = delta("error");
  tally.moves = delta("move");
  tally.writes = delta("write");
  return tally;
}
