/**
 * Redis as the first line of the claim path: a fast first check, never the truth.
 *
 * With KEYWARD_REDIS_URL set (one server, Sentinel or Cluster: redis-connection.ts), `keyward start`
 * remembers, for keys PostgreSQL answered as stored and `done` (which ones: below), an entry `(source, event id) → expiry,
 * first claim time, duplicate count, payload hash, digest of the attempt id`, expiring before the key. A
 * claim whose every occurrence PostgreSQL would answer `duplicate` (no payload-hash conflict, not the attempt
 * that made the key) is answered from a valid entry without PostgreSQL, and counted like any other. Anything
 * else — a miss, an entry that is not valid (below), an error, a command slower than KEYWARD_REDIS_TIMEOUT_MS —
 * goes to PostgreSQL as without Redis. Redis never answers `claimed`. A server asks Redis only for a source
 * whose recent claims were often duplicates (PROBE_MIN_SHARE), remembers the keys such a source's claims make
 * (and, for any source, a key PostgreSQL answered `duplicate`), and writes entries in small batches: each only
 * ever sends to PostgreSQL a claim that Redis could have answered, never the other way round.
 *
 * The claim path reads top to bottom (claim.ts): `redisFirstLine()` before the statement (the events Redis
 * answers), and one note after it, `line.after(…)` (merge the answers, remember the entries to write,
 * update the source's duplicate share).
 *
 * THE INVARIANT. An entry answers `duplicate` only if no release, expiry, takeover or mode switch of its key
 * can have happened since PostgreSQL answered the claim it describes, whatever Redis forgot in between: losing
 * Redis state can only ever cause misses. How:
 *
 * - Shards and generations. Keys are spread over BUCKETS buckets; a bucket's entries and its meta key share a
 *   hash tag (`{kw:<database>:<bucket>}`: one hash slot, so one Cluster node and one script can see them
 *   all). The meta key is a sorted set holding the bucket's generation `g:<random token>:<history>` (score
 *   +inf) and its tombstones (member: the entry's key, score: when the tombstone ends, Redis clock). The
 *   history is the node's `run_id` and `master_replid`, read by every script from INFO: it changes when the
 *   node restarts (with or without persistence) and when a replica is promoted. A generation counts only
 *   while the meta key holds it and the node's history is the one it was made in; otherwise the next write
 *   makes a new generation from a fresh random token. A token never comes back once lost.
 * - Every entry carries the generation its server knew and the namespace (settings.redis_epoch) it used when
 *   the claim statement was SENT (a snapshot taken before the statement: claim.ts). A write is refused unless
 *   that generation is the bucket's current one, no tombstone of the key is alive, and it executes within
 *   WRITE_WINDOW_MS of the snapshot (Redis's clock); a read takes an entry only if its generation is the
 *   bucket's current one, its namespace the server's current one, and its key the one asked for.
 * - Release (settle.ts): the release statement locks and deletes the row; then, before the transaction
 *   commits, the INVALIDATE script deletes the entry and adds a tombstone (life ≥ 60 s, far longer than the
 *   write window); then it commits. A claim whose statement saw the old key ran before the row lock, so its
 *   snapshot is older than the tombstone. Its entry write W either ran before the tombstone (and the script
 *   deleted it) or after: then it is refused by the tombstone, or — if the tombstone was lost — by its
 *   generation, because losing the tombstone means losing the meta key (flush, eviction, restart) or changing
 *   the history (restart, promotion), and either ends the generation W carries, which existed before the
 *   tombstone. So from the tombstone on (before the commit) no entry of the old key exists, and none appears.
 * - If INVALIDATE fails (Redis down, slow, not ours to reach: the CLI), the release instead moves every server
 *   to a new namespace while holding the row lock: it commits `redis_epoch + 1` with NOTIFY, waits
 *   REVOCATION_BOUND_MS (every server that still uses Redis knows the new namespace by then: the listener's
 *   pings, lib/auth/api-key-cache.ts), then commits the release. Entries of claims that saw the old key
 *   carry the old namespace: no server takes them any more. A read re-checks trust and namespace when its
 *   reply arrives, so a slow reply cannot carry an old answer past the bound.
 *
 * Case by case (docs/architecture.md and docs/reliability.md, "Redis first line", have the table):
 * - FLUSHALL / FLUSHDB, restart without persistence: meta keys are gone → every generation is over → old
 *   entries are gone too, and late writes carrying an old generation are refused. Only misses.
 * - Restart with persistence (an older RDB/AOF): a new run_id → every generation of that node is over.
 * - Eviction, any policy: an evicted entry is a miss; an evicted meta key takes its generation and tombstones
 *   together (one key); under volatile-* policies meta keys (no TTL) are never evicted; under noeviction a
 *   write that needs memory fails (the release then moves the namespace).
 * - Replica promotion (REPLICAOF NO ONE, Sentinel, Cluster failover, manual or forced): the promoted node's
 *   master_replid is new → every entry and tombstone it inherited belongs to an ended generation. A demoted
 *   primary answers reads with nothing (role check) and refuses writes.
 * - Network cut, black hole, slow Redis: every command has a timeout; a late read is ignored; a late write
 *   executes within its window or not at all; a release that cannot confirm INVALIDATE moves the namespace.
 * - Cluster: a bucket's meta and entries live in one hash slot, so each shard carries its own generations
 *   and the argument above holds per shard.
 * - Expiry: an entry's PX is the key's remaining life less the write window and a margin. Extensions only
 *   lengthen a key. Only `done` keys get entries; completing, takeovers and in-flight answers concern
 *   `processing` keys.
 * - Saved results and payload hashes (issue 25): a key holding a saved result gets no entry (a duplicate must
 *   answer the result; a key gets it when it becomes `done`, never later), and a claim bringing a payload
 *   hash to an entry without one goes to PostgreSQL, which keeps the key's first hash: Redis never stores one.
 * What Redis cannot promise and this does not cover: two primaries of one shard serving at once (a network
 * split where a server still reaches a primary that was replaced); clocks of Redis nodes stepping back by
 * more than the tombstone's slack (50 s).
 */
import { z } from "zod";
import { processGlobal } from "@/lib/process-global";
import { createHash, randomBytes } from "node:crypto";
import type Redis from "ioredis";
import type { Cluster } from "ioredis";
import pg from "pg";
import { db as sharedDb } from "@/lib/db/client";
import { execute, isUnavailable, query, toUnavailable } from "@/lib/db/sql";
import type { Db } from "@/lib/db/transaction";
import type { ClaimRow, ClaimInput } from "./classify";
import type { ClaimResult } from "./schema";
import { cacheTrusted, keepListenerAwake, listenerEpoch, REVOCATION_BOUND_MS } from "@/lib/auth/api-key-cache";
import { connectRedis, type RedisTopology } from "./redis-connection";
import type { Job } from "@/lib/jobs/registry";

/** Keys are spread over this many buckets (hash slots in a Cluster), each with its own generation. */
export const BUCKETS = 64;
/** A claim's answer that comes later than this after its snapshot writes no entry. */
const ANSWER_WINDOW_MS = 5_000;
/** An entry write that Redis executes later than this after its claim's snapshot is refused by the script. */
const WRITE_WINDOW_MS = ANSWER_WINDOW_MS + 5_000;
/** Entries expire this much before their key, on top of the write window. */
const EXPIRY_MARGIN_MS = 2_000;
/** Keys with less life left than this are not worth an entry. */
const MIN_ENTRY_MS = 5_000;
/** After this many failed or slow commands in a row, Redis is skipped for BREAKER_MS. */
const BREAKER_FAILURES = 3;
const BREAKER_MS = 1_000;
const FLUSH_MS = 5_000;
/** How often the Redis clock's offset is measured again (redisJobs). */
const OFFSET_MS = 60_000;
/**
 * Entry writes wait this long to go out together (one script call per bucket for the claims answered meanwhile).
 * Short: a sender's retries can follow each other within milliseconds, and each one answered before its key's
 * entry is written costs a lookup and the statement (bench/redis-split.ts, 2026-12-04, load ~7: a storm of back-to-back
 * retries at 8 clients ran 0.91× of Redis off at 10 ms, 1.40× at 1 ms).
 */
const WRITE_BATCH_MS = 1;
const WRITE_BATCH_MAX = 256;
/**
 * Redis is asked only for sources whose recent claims were duplicates often enough to pay for the lookup:
 * an exponentially weighted share of duplicates among each source's answers (Redis's and PostgreSQL's),
 * weight 1/32 per answer. Below PROBE_MIN_SHARE a claim goes straight to PostgreSQL, which answers it
 * correctly either way: skipping Redis only ever costs speed. A source starts at PROBE_START_SHARE.
 */
const PROBE_MIN_SHARE = 0.2;
const PROBE_START_SHARE = 0.5;
const SHARE_WEIGHT = 1 / 32;
/** Releases wait this long for INVALIDATE before moving the namespace instead. */
const INVALIDATE_TIMEOUT_MS = 1_000;
/** A connection silent this long while commands wait is given up (black-holed) and replaced. */
const SOCKET_TIMEOUT_MS = 1_500;
const LOG_EVERY_MS = 10_000;
/** The shortest tombstone: with a 10 s write window, 50 s of slack for the nodes' clocks. */
const MIN_TOMBSTONE_MS = 60_000;

/**
 * The node's history (run_id and replication id), or nil on a replica; the bucket's current generation token
 * given that history, or nil.
 */
const LUA_PRELUDE = `
local function history()
  local r = redis.call('INFO', 'replication')
  if not string.find(r, 'role:master', 1, true) then return nil end
  local s = redis.call('INFO', 'server')
  return string.match(s, 'run_id:(%x+)') .. '.' .. string.match(r, 'master_replid:(%x+)')
end
local function current(meta, h)
  local g = redis.call('ZRANGE', meta, -1, -1)[1]
  if not g then return nil end
  local token, gh = string.match(g, '^g:([^:]+):(.+)$')
  if gh ~= h then return nil end
  return token
end
local function renew(meta, h, candidate)
  redis.call('DEL', meta)
  redis.call('ZADD', meta, '+inf', 'g:' .. candidate .. ':' .. h)
  return candidate
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * Every script's reply starts with ARGV[1], the call's id (callId()): a reply is taken only by the call it
 * names (see `answered`).
 */

/** KEYS: meta, entry…; ARGV: call id. Answers {call id, current token or '', value or false…}. */
const READ_SCRIPT = `${LUA_PRELUDE}
local h = history()
local token = h and current(KEYS[1], h)
if not token then return {ARGV[1], ''} end
local out = {ARGV[1], token}
for i = 2, #KEYS do out[i + 1] = redis.call('GET', KEYS[i]) end
return out`;

/**
 * KEYS: meta, entry…; ARGV: call id, token, candidate, then deadline, life, value for each entry. Writes the
 * entries whose deadline has not passed and whose key has no live tombstone, if `token` is the current
 * generation. Starts a new generation from `candidate` when there is none. Answers {call id, current token,
 * entries written}.
 */
const WRITE_SCRIPT = `${LUA_PRELUDE}
local h = history()
if not h then return {ARGV[1], '', 0} end
local token = current(KEYS[1], h)
if not token then return {ARGV[1], renew(KEYS[1], h, ARGV[3]), 0} end
if ARGV[2] ~= token then return {ARGV[1], token, 0} end
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local written = 0
for i = 2, #KEYS do
  local a = (i - 2) * 3 + 4
  if now <= tonumber(ARGV[a]) and not redis.call('ZSCORE', KEYS[1], KEYS[i]) then
    redis.call('SET', KEYS[i], ARGV[a + 2], 'PX', ARGV[a + 1])
    written = written + 1
  end
end
return {ARGV[1], token, written}`;

/**
 * KEYS: meta, entry…; ARGV: call id, candidate, tombstone life (ms). Deletes the entries and tombstones their
 * keys (starting a generation if there is none). Answers {call id, current token}. Fails on a replica
 * (READONLY) and when Redis is out of memory for the tombstone (the entries are deleted first): the release
 * then moves the namespace.
 */
const INVALIDATE_SCRIPT = `${LUA_PRELUDE}
local h = history()
if not h then return redis.error_reply('READONLY not a primary') end
for i = 2, #KEYS do redis.call('DEL', KEYS[i]) end
local token = current(KEYS[1], h) or renew(KEYS[1], h, ARGV[2])
local until_ms = now_ms() + tonumber(ARGV[3])
for i = 2, #KEYS do redis.call('ZADD', KEYS[1], until_ms, KEYS[i]) end
return {ARGV[1], token}`;

type Scripted = {
  keywardRead(numKeys: number, ...args: string[]): Promise<unknown>;
  keywardWrite(numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  keywardInvalidate(numKeys: number, ...args: (string | number)[]): Promise<unknown>;
};
type Client = (Redis | Cluster) & Scripted;

export type Entry = { key: string; expiresAt: number; receivedAt: number; duplicateCount: number; payloadHash: string; attempt: string };

/** What a claim's entries are written with: known when its statement was sent (see the header). */
type Snapshot = { epoch: string | undefined; gens: ReadonlyMap<number, string>; at: number; deadline: number };

type PendingWrite = { bucket: number; token: string; key: string; deadline: number; life: number; value: string };

type State = {
  client?: Client;
  invalidator?: Client;
  topology?: RedisTopology;
  database?: string;
  /** Redis clock − local clock, ms (measured at connect and every minute). */
  offset: number;
  /**
   * Database clock − local clock, ms: measured at start, then from every claim statement's now() (halfway
   * through its round trip). Dates the duplicates Redis answers on the database's clock, as PostgreSQL's are.
   */
  dbOffset: number;
  tombstoneMs: number;
  failures: number;
  breakerUntil: number;
  /** Each bucket's current generation token as last seen; replaced whole on change (snapshots keep theirs). */
  gens: ReadonlyMap<number, string>;
  pendingDuplicates: Map<string, { source: string; eventId: string; n: number }>;
  pendingWrites: PendingWrite[];
  writeTimer?: NodeJS.Timeout;
  /** Per source: the recent share of duplicates among its claims' answers (see PROBE_MIN_SHARE). */
  duplicateShare: Map<string, number>;
  /** The server's log, and when a failed command was last reported in it (one line per LOG_EVERY_MS). */
  log: (m: string) => void;
  loggedAt: number;
  stats: { hits: number; misses: number; skipped: number; errors: number; writes: number; stale: number; moves: number };
};

const state: State = processGlobal("redis", (): State => ({
  offset: 0,
  dbOffset: 0,
  tombstoneMs: MIN_TOMBSTONE_MS,
  failures: 0,
  breakerUntil: 0,
  gens: new Map(),
  pendingDuplicates: new Map(),
  pendingWrites: [],
  duplicateShare: new Map(),
  log: () => {},
  loggedAt: -Infinity,
  stats: { hits: 0, misses: 0, skipped: 0, errors: 0, writes: 0, stale: 0, moves: 0 },
}));

export type RedisOptions = { url: string; timeoutMs: number; statementTimeoutMs: number; connectTimeoutMs: number; log: (m: string) => void };

/** The database's identity (system identifier and oid), hashed: two databases never share entries. */
async function databaseId(): Promise<{ id: string; dbNow: Date; asked: number }> {
  const asked = Date.now();
  const [db] = await query(
    z.object({ id: z.string(), db_now: z.date() }),
    "SELECT (SELECT system_identifier FROM pg_control_system())::text || '.' || (SELECT oid FROM pg_database WHERE datname = current_database())::text AS id, clock_timestamp() AS db_now",
  );
  return { id: createHash("sha256").update(db.id).digest("base64url").slice(0, 12), dbNow: db.db_now, asked };
}

function newClient(url: string, timeoutMs: number, pipelined: boolean, log: (m: string) => void): { client: Client; topology: RedisTopology } {
  const { client, topology } = connectRedis(url, {
    commandTimeout: timeoutMs,
    enableOfflineQueue: false, // a command while disconnected fails at once
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: (times: number) => Math.min(100 * times, 2000),
    lazyConnect: false,
    // A connection that answers nothing for this long while commands wait is destroyed and replaced.
    socketTimeout: SOCKET_TIMEOUT_MS,
    // Commands issued in the same tick (concurrent claims' reads, entry writes) go out in one write.
    enableAutoPipelining: pipelined,
  });
  // Connection errors: one line per LOG_EVERY_MS at most (a flapping network must not flood the log).
  let loggedAt = -Infinity;
  let suppressed = 0;
  client.on("error", (err: Error) => {
    const now = performance.now();
    if (now - loggedAt < LOG_EVERY_MS) {
      suppressed++;
      return;
    }
    log(`Redis: ${err.message}${suppressed ? ` (and ${suppressed} more errors since the last report)` : ""}; claims go to PostgreSQL meanwhile`);
    loggedAt = now;
    suppressed = 0;
  });
  client.on("ready", () => void measureOffset(client as Client));
  client.defineCommand("keywardRead", { lua: READ_SCRIPT }); // numkeys is each call's first argument
  client.defineCommand("keywardWrite", { lua: WRITE_SCRIPT });
  client.defineCommand("keywardInvalidate", { lua: INVALIDATE_SCRIPT });
  return { client: client as Client, topology };
}

/** Connects (in the background: claims go to PostgreSQL until it is ready). */
export async function startRedis(o: RedisOptions): Promise<void> {
  const db = await databaseId();
  state.dbOffset = db.dbNow.getTime() - (db.asked + Date.now()) / 2;
  state.database = db.id;
  state.log = o.log;
  state.tombstoneMs = Math.max(MIN_TOMBSTONE_MS, 2 * (o.statementTimeoutMs + o.connectTimeoutMs + 1000 + WRITE_WINDOW_MS));
  const main = newClient(o.url, o.timeoutMs, true, o.log);
  state.client = main.client;
  state.topology = main.topology;
  state.invalidator = newClient(o.url, INVALIDATE_TIMEOUT_MS, false, o.log).client;
}

/**
 * The first line's two periodic jobs (lib/jobs/registry.ts; `keyward start` registers them when
 * KEYWARD_REDIS_URL is set; each does nothing until startRedis has connected): the Redis clock's offset
 * from this server's, measured again every minute (one TIME command; entries' expiries are on Redis's
 * clock), and the duplicate counts Redis answered, added to their keys every FLUSH_MS (one set-based
 * statement per pass, failed counts kept for the next). Per process: each server counts its own.
 */
export function redisJobs(): Job[] {
  return [
    {
      name: "measuring the Redis clock",
      everyMs: OFFSET_MS,
      run: async () => {
        if (state.client) await measureOffset(state.client);
      },
    },
    { name: "adding Redis's duplicate counts", everyMs: FLUSH_MS, run: () => flushRedisDuplicates() },
  ];
}

export async function stopRedis(): Promise<void> {
  clearTimeout(state.writeTimer);
  state.writeTimer = undefined;
  state.pendingWrites = [];
  await flushRedisDuplicates().catch(() => {});
  const clients = [state.client, state.invalidator];
  state.client = state.invalidator = undefined;
  for (const c of clients) c?.disconnect();
}

async function measureOffset(c: Client): Promise<void> {
  try {
    const before = Date.now();
    const [s, us] = await (c as Redis).time();
    const after = Date.now();
    state.offset = Number(s) * 1000 + Math.floor(Number(us) / 1000) - (before + after) / 2;
  } catch {
    /* the next ready or the minute timer measures again */
  }
}

/** Whether Redis is configured in this process at all (cheap: lets the library skip the lookup). */
export function redisConfigured(): boolean {
  return state.client !== undefined;
}

const ready = (c: Client | undefined): c is Client => c !== undefined && c.status === "ready";

/** Whether this process uses Redis now (configured, connected, not tripped, its namespace known). */
export function redisActive(): boolean {
  if (!state.client) return false;
  keepListenerAwake();
  return ready(state.client) && performance.now() >= state.breakerUntil && cacheTrusted() && listenerEpoch() !== undefined;
}

export function redisStats(): State["stats"] {
  return state.stats;
}

/** FNV-1a of `<source>/<event id>`: the key's bucket. */
export function bucketOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return (h >>> 0) % BUCKETS;
}
const tagOf = (bucket: number) => `{kw:${state.database}:${bucket}}`;
const metaOf = (bucket: number) => `${tagOf(bucket)}m`;
const entryOf = (bucket: number, name: string) => `${tagOf(bucket)}k:${name}`;
const digest = (attemptId: string) => createHash("sha256").update(attemptId).digest("base64url").slice(0, 22);
const candidate = () => randomBytes(16).toString("base64url");

/** A script call's id, echoed first in its reply: unique within this process (a connection is one process's). */
let calls = 0;
const callId = () => (++calls).toString(36);

/**
 * The reply of the call `id`, without its id; throws if the reply names another call. On a healthy connection
 * replies follow their commands in order, also through timeouts (a late reply meets its own, already
 * rejected, command). A connection that lost bytes in between (a middlebox that dropped them: TCP itself
 * never does) would pair every later reply with an earlier command, for as long as it stays open: a
 * release's INVALIDATE confirmed by the reply of another that ran, a read answered with another bucket's
 * entries. So a reply is only taken by the call it names, and a connection caught answering another call is
 * replaced (once: realign).
 */
function answered(reply: unknown, id: string, client: Client): unknown[] {
  if (Array.isArray(reply) && reply[0] === id) return reply.slice(1);
  realign(client);
  throw new Error("Redis answered another command's call: the connection is out of step and is replaced");
}

const realigning = new WeakSet<object>();
/** Replaces a connection that answers other calls' replies: once per connection (no listener per failure). */
function realign(client: Client): void {
  if (client.status !== "ready" || realigning.has(client)) return;
  realigning.add(client);
  client.once("ready", () => realigning.delete(client));
  client.disconnect(true);
}

function learn(bucket: number, token: string): void {
  if (!token || state.gens.get(bucket) === token) return;
  state.gens = new Map(state.gens).set(bucket, token);
}

/**
 * A command failed or timed out. ioredis keeps replies paired with their commands through a timeout (the late
 * reply meets its own, already rejected, command), and a connection that hears nothing at all while commands
 * wait is destroyed and replaced by the client itself (socketTimeout: a black hole). So a failure only counts
 * towards the breaker. Calling disconnect() here instead, once per failed command, added a close listener to
 * the same half-closed socket each time: the MaxListenersExceededWarning of issue 22.
 */
function failed(err?: unknown): void {
  state.stats.errors++;
  const now = performance.now();
  if (err && now - state.loggedAt > LOG_EVERY_MS) {
    state.loggedAt = now;
    state.log(`Redis: a command failed (${(err as Error).message}; ${state.stats.errors} failures so far); claims go to PostgreSQL meanwhile`);
  }
  if (++state.failures >= BREAKER_FAILURES) {
    state.failures = 0;
    state.breakerUntil = performance.now() + BREAKER_MS;
  }
}

/** An entry: `<source>/<event id>` NUL generation NUL namespace NUL JSON fields (easy to extend). */
function encode(name: string, token: string, epoch: string, fields: { e: number; r: number; d: number; h: string; a: string }): string {
  return `${name}\0${token}\0${epoch}\0${JSON.stringify(fields)}`;
}

function decode(value: unknown, name: string, token: string, epoch: string): Entry | "stale" | null {
  if (typeof value !== "string" || !value) return null;
  const [key, t, ns, json] = value.split("\0");
  // The entry names its key: an answer that belongs to another command is never taken for this one.
  if (key !== name || json === undefined) return null;
  if (t !== token || ns !== epoch) return "stale";
  const f = JSON.parse(json) as { e: number; r: number; d: number; h: string; a: string };
  return { key, expiresAt: f.e, receivedAt: f.r, duplicateCount: f.d, payloadHash: f.h, attempt: f.a };
}

/** Whether PostgreSQL would answer `duplicate` to this request for the key an entry describes. */
function answersDuplicate(e: Entry, input: ClaimInput): boolean {
  if (e.payloadHash && input.payloadHash && e.payloadHash !== input.payloadHash) return false; // payload_mismatch
  if (!e.payloadHash && input.payloadHash) return false; // PostgreSQL stores the key's first payload hash
  if (e.attempt && input.attemptId && e.attempt === digest(input.attemptId)) return false; // a repeat: claimed again
  return true;
}

/**
 * The events of this request that Redis can answer `duplicate` for, by event id (every occurrence of the id
 * must qualify). Empty on a miss, an error or a timeout: those go to PostgreSQL.
 */
async function lookup(source: string, events: readonly ClaimInput[]): Promise<Map<string, Entry>> {
  const hits = new Map<string, Entry>();
  const epoch = listenerEpoch();
  if (!redisActive() || epoch === undefined) return hits;
  if (!asksRedis(source)) {
    state.stats.skipped += events.length;
    return hits;
  }
  const byBucket = new Map<number, string[]>();
  for (const id of new Set(events.map((e) => e.eventId))) {
    const b = bucketOf(`${source}/${id}`);
    const ids = byBucket.get(b);
    if (ids) ids.push(id);
    else byBucket.set(b, [id]);
  }
  const client = state.client!;
  let replies: unknown[][];
  try {
    replies = await Promise.all(
      [...byBucket].map(async ([b, ids]) => {
        const id = callId();
        return answered(await client.keywardRead(ids.length + 1, metaOf(b), ...ids.map((k) => entryOf(b, `${source}/${k}`)), id), id, client);
      }),
    );
    state.failures = 0;
  } catch (err) {
    failed(err);
    return hits;
  }
  // Checked again now that the answer is here: a namespace move or a lost listener in the meantime voids it.
  if (!cacheTrusted() || listenerEpoch() !== epoch) return hits;
  const now = Date.now();
  let i = 0;
  let asked = 0;
  for (const [b, ids] of byBucket) {
    const [token, ...values] = replies[i++];
    learn(b, typeof token === "string" ? token : "");
    asked += ids.length;
    ids.forEach((id, j) => {
      const e = typeof token === "string" && token ? decode(values[j], `${source}/${id}`, token, epoch) : null;
      if (e === "stale") state.stats.stale++;
      else if (e && e.expiresAt > now) hits.set(id, e);
    });
  }
  for (const input of events) {
    const e = hits.get(input.eventId);
    if (e && !answersDuplicate(e, input)) hits.delete(input.eventId);
  }
  state.stats.hits += hits.size;
  state.stats.misses += asked - hits.size;
  return hits;
}

/** The answer to one occurrence of an event Redis answers for (`nth`: 1 for its first in the request). */
function duplicateFromEntry(source: string, eventId: string, e: Entry, nth: number): ClaimResult {
  return {
    outcome: "duplicate",
    source,
    eventId,
    status: "done",
    firstSeenAt: new Date(e.receivedAt).toISOString(),
    expiresAt: new Date(e.expiresAt).toISOString(),
    // At least this: duplicates counted by other servers since the entry was written are not in it.
    duplicateCount: e.duplicateCount + nth,
  };
}

/** One claim request's passage through the first line (claim.ts): before, after and around the statement. */
export type FirstLine = {
  /** The events PostgreSQL must answer (all of them on a miss). */
  toDatabase: ClaimInput[];
  /**
   * The note after the statement, in one call: PostgreSQL's answers (for `toDatabase`, in order, from
   * `rows`) merged with Redis's in input order; the duplicates Redis answered counted on their keys and
   * their ages (database clock) pushed to `ages`; the `done` keys of `rows` remembered (off the answer's
   * path, not awaited); the source's duplicate share updated (whether to ask Redis next time).
   */
  after(fromDatabase: ClaimResult[], rows: readonly ClaimRow[], ages: number[]): ClaimResult[];
};

/**
 * Before the statement: the snapshot the entries will carry, and the events Redis answers `duplicate` for.
 * Undefined when this process does not use Redis (anywhere but `keyward start` with KEYWARD_REDIS_URL).
 */
export async function redisFirstLine(source: string, events: ClaimInput[]): Promise<FirstLine | undefined> {
  if (!state.client) return undefined;
  // Taken before the read, so before the statement is sent: what this server knew then (see the header).
  const snapshot: Snapshot = { epoch: listenerEpoch(), gens: state.gens, at: performance.now(), deadline: Math.floor(Date.now() + state.offset + WRITE_WINDOW_MS) };
  const hits = await lookup(source, events);
  const toDatabase = hits.size ? events.filter((e) => !hits.has(e.eventId)) : events;
  return {
    toDatabase,
    after(fromDatabase, rows, ages) {
      if (rows.length > 0) remember(source, rows, snapshot);
      let results = fromDatabase;
      if (hits.size) {
        const seen = new Map<string, number>();
        let next = 0;
        results = events.map((e) => {
          const entry = hits.get(e.eventId);
          if (!entry) return fromDatabase[next++];
          const nth = (seen.get(e.eventId) ?? 0) + 1;
          seen.set(e.eventId, nth);
          ages.push(redisDuplicateAge(entry));
          return duplicateFromEntry(source, e.eventId, entry, nth);
        });
        for (const [eventId, n] of seen) countRedisDuplicate(source, eventId, n);
      }
      const outcomes = results.filter((r) => !r.repeat).map((r) => r.outcome);
      noteClaimAnswers(source, outcomes.filter((o) => o === "duplicate").length, outcomes.length);
      return results;
    },
  };
}

/** Whether this server asks Redis for `source`'s claims (and remembers the keys they claim): see PROBE_MIN_SHARE. */
function asksRedis(source: string): boolean {
  return (state.duplicateShare.get(source) ?? PROBE_START_SHARE) >= PROBE_MIN_SHARE;
}

function noteClaimAnswers(source: string, duplicates: number, answers: number): void {
  let share = state.duplicateShare.get(source) ?? PROBE_START_SHARE;
  for (let i = 0; i < answers; i++) share += ((i < duplicates ? 1 : 0) - share) * SHARE_WEIGHT;
  state.duplicateShare.set(source, share);
}

/**
 * The age, in seconds on the database's clock, of a duplicate Redis answers now: the key's first claim
 * (the entry's received_at, a database time) to the database's now() as this server estimates it. Off by
 * at most about half a claim's round trip, far below the histogram's smallest bucket (1 s).
 */
function redisDuplicateAge(e: Entry): number {
  return Math.max(0, (Date.now() + state.dbOffset - e.receivedAt) / 1000);
}

/** Adds duplicates answered from Redis to their keys' duplicate_count, at the next flush. */
function countRedisDuplicate(source: string, eventId: string, n: number): void {
  const k = `${source}/${eventId}`;
  const cur = state.pendingDuplicates.get(k);
  if (cur) cur.n += n;
  else state.pendingDuplicates.set(k, { source, eventId, n });
}

export async function flushRedisDuplicates(): Promise<void> {
  if (state.pendingDuplicates.size === 0) return;
  const batch = [...state.pendingDuplicates.values()];
  state.pendingDuplicates.clear();
  try {
    // Raw SQL: one set-based statement for the whole batch.
    await execute(
      `UPDATE dedup_keys d SET duplicate_count = d.duplicate_count + u.n, last_duplicate_at = now()
       FROM unnest($1::text[], $2::text[], $3::int[]) AS u(source, event_id, n)
       WHERE d.source = u.source AND d.event_id = u.event_id AND d.expires_at > now()`,
      [batch.map((b) => b.source), batch.map((b) => b.eventId), batch.map((b) => b.n)],
    );
  } catch (err) {
    for (const b of batch) countRedisDuplicate(b.source, b.eventId, b.n);
    throw err;
  }
}

/**
 * The entry fields a row is remembered with, or null for a row the first line must leave to PostgreSQL (only
 * `done` keys: a key in flight, or one whose duplicates need more than these fields, is never answered here).
 */
function fieldsOf(r: ClaimRow): { e: number; r: number; d: number; h: string; a: string } | null {
  // A key holding a saved result: its duplicates answer the result, which only PostgreSQL has.
  if (r.status !== "done" || r.result_status !== null) return null;
  return { e: r.expires_at.getTime(), r: r.received_at.getTime(), d: r.duplicate_count, h: r.payload_hash ?? "", a: r.attempt_id ? digest(r.attempt_id) : "" };
}

function remember(source: string, rows: readonly ClaimRow[], snapshot: Snapshot): void {
  const elapsed = performance.now() - snapshot.at;
  if (rows.length > 0) state.dbOffset = rows[0].db_now.getTime() - (Date.now() - elapsed / 2);
  if (!redisActive() || snapshot.epoch === undefined || elapsed > ANSWER_WINDOW_MS) return;
  // A key this statement just claimed is remembered only for a source Redis is asked for (its duplicates
  // are common enough); a key answered `duplicate` always (its sender is retrying it now). A source of first
  // claims thus costs Redis nothing, and its first duplicate writes the entry its next ones are answered from.
  const rememberClaimed = asksRedis(source);
  for (const r of rows) {
    if (r.claimed_now && !rememberClaimed) continue;
    const fields = fieldsOf(r);
    if (!fields) continue;
    // Written by the deadline at the latest, the entry must expire before its key: its PX leaves out the
    // whole write window (the statement ran after the snapshot, so its now() is no earlier) and a margin.
    const life = r.expires_at.getTime() - r.db_now.getTime() - WRITE_WINDOW_MS - EXPIRY_MARGIN_MS;
    if (life < MIN_ENTRY_MS) continue;
    const name = `${source}/${r.event_id}`;
    const bucket = bucketOf(name);
    const token = snapshot.gens.get(bucket) ?? "";
    state.pendingWrites.push({ bucket, token, key: entryOf(bucket, name), deadline: snapshot.deadline, life: Math.floor(life), value: encode(name, token, snapshot.epoch, fields) });
  }
  if (state.pendingWrites.length >= WRITE_BATCH_MAX) writePending();
  else if (state.pendingWrites.length > 0 && !state.writeTimer) state.writeTimer = setTimeout(writePending, WRITE_BATCH_MS);
}

/** Sends the waiting entry writes: one script call per bucket and generation. */
function writePending(): void {
  clearTimeout(state.writeTimer);
  state.writeTimer = undefined;
  const batch = state.pendingWrites;
  state.pendingWrites = [];
  if (batch.length === 0 || !redisActive()) return;
  const client = state.client!;
  const groups = new Map<string, PendingWrite[]>();
  for (const w of batch) {
    const k = `${w.bucket}|${w.token}`;
    const g = groups.get(k);
    if (g) g.push(w);
    else groups.set(k, [w]);
  }
  for (const ws of groups.values()) {
    const { bucket, token } = ws[0];
    // An unknown generation writes nothing, but learns the current one (or starts it) for later claims.
    const entries = token ? ws : [];
    const id = callId();
    client
      .keywardWrite(entries.length + 1, metaOf(bucket), ...entries.map((w) => w.key), id, token, candidate(), ...entries.flatMap((w) => [w.deadline, w.life, w.value]))
      .then((reply) => {
        const [current, written] = answered(reply, id, client);
        learn(bucket, String(current));
        state.stats.writes += Number(written);
      })
      .catch((err) => failed(err));
  }
}

/**
 * Deletes and tombstones these keys' entries (INVALIDATE). True when Redis confirmed it; false when it could
 * not (not configured in this process, unreachable, slow, a replica, out of memory).
 */
export async function invalidateKeys(keys: readonly { source: string; eventId: string }[]): Promise<boolean> {
  const inv = state.invalidator;
  if (!ready(inv) || state.database === undefined) return false;
  const byBucket = new Map<number, string[]>();
  for (const k of keys) {
    const name = `${k.source}/${k.eventId}`;
    const b = bucketOf(name);
    byBucket.set(b, [...(byBucket.get(b) ?? []), entryOf(b, name)]);
  }
  try {
    await Promise.all(
      [...byBucket].map(async ([b, entries]) => {
        const id = callId();
        const [token] = answered(await inv.keywardInvalidate(entries.length + 1, metaOf(b), ...entries, id, candidate(), state.tombstoneMs), id, inv);
        learn(b, String(token));
      }),
    );
    return true;
  } catch (err) {
    failed(err);
    return false;
  }
}

/**
 * Moves every server to a new Redis namespace (no-op unless Redis was ever used with this database: no
 * `redis_epoch` setting) and resolves once REVOCATION_BOUND_MS has passed since the move committed: by
 * then every server that still reads Redis uses the new namespace, in which no older entry counts.
 */
export async function moveRedisNamespace(): Promise<boolean> {
  // A connection of its own, not the pool's: a release calls this while its transaction holds a pooled
  // connection, and releases enough to fill the pool must not wait on each other for a second one.
  const c = new pg.Client({ connectionString: sharedDb().url, connectionTimeoutMillis: 3_000 });
  c.on("error", () => {});
  let moved: boolean;
  try {
    await c.connect();
    // Raw SQL: an UPDATE … RETURNING with pg_notify in one statement (the notification commits with it).
    const { rows } = await c.query<{ value: string }>(
      `WITH bumped AS (
         UPDATE settings SET value = (value::bigint + 1)::text, updated_at = now() WHERE key = 'redis_epoch' RETURNING value)
       SELECT value, pg_notify('keyward_api_keys', 'redis-epoch:' || value) FROM bumped`,
    );
    moved = rows.length > 0;
  } catch (err) {
    throw isUnavailable(err) ? toUnavailable(err) : err;
  } finally {
    void c.end().catch(() => {});
  }
  if (moved) await new Promise((resolve) => setTimeout(resolve, REVOCATION_BOUND_MS));
  return moved;
}

/**
 * A release's Redis step, run while its transaction holds the key's row lock and before it commits (settle.ts):
 * INVALIDATE, or if Redis cannot confirm it, a namespace move (see the header for why either suffices).
 * The move is skipped when Redis was never used with this database (no `redis_epoch`, read on the release's
 * own connection `on`, after its row lock): no entry of any server exists then, and a server that starts
 * Redis later registers first and claims the key only through that lock. Without this check every release
 * of a database that runs without Redis opened a connection of its own for a move that moved nothing.
 */
export async function forgetReleasedKey(source: string, eventId: string, on?: Db): Promise<void> {
  if (await invalidateKeys([{ source, eventId }])) return;
  if (on && !(await redisEverUsed(on))) return;
  state.stats.moves++;
  await sharedMove();
}

async function redisEverUsed(on: Db): Promise<boolean> {
  const [{ used }] = await query(z.object({ used: z.boolean() }), "SELECT EXISTS (SELECT 1 FROM settings WHERE key = 'redis_epoch') AS used", [], on);
  return used;
}

/**
 * Releases that fall back at the same moment share one namespace move: its bump is sent after every one of
 * them asked (after their row locks), which is all each of them needs.
 */
let nextMove: Promise<boolean> | undefined;
function sharedMove(): Promise<boolean> {
  nextMove ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
    nextMove = undefined;
    return moveRedisNamespace();
  });
  return nextMove;
}

/** Marks this database as one Redis is used with (the first server with KEYWARD_REDIS_URL does it). */
export async function registerRedisUse(): Promise<void> {
  await execute("INSERT INTO settings (key, value) VALUES ('redis_epoch', '1') ON CONFLICT (key) DO NOTHING");
}

/**
 * `keyward redis forget`: connects to Redis just for this (the CLI has no first line of its own), and
 * disconnects. Undefined when Redis could not be reached within the timeout.
 */
export async function withInvalidator<T>(url: string, fn: () => Promise<T>): Promise<T> {
  const db = await databaseId();
  state.database = db.id;
  const { client } = newClient(url, INVALIDATE_TIMEOUT_MS, false, () => {});
  state.invalidator = client;
  try {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, 2_000);
      client.once("ready", () => {
        clearTimeout(t);
        resolve();
      });
    });
    return await fn();
  } finally {
    state.invalidator = undefined;
    client.disconnect();
  }
}
