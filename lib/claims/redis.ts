/**
 * Redis as the first line of the claim path (issue 15 §3): a fast first check, never the truth.
 *
 * With KEYWARD_REDIS_URL set, `keyward start` remembers, for every key PostgreSQL answered as stored and
 * `done`, `(source, event id) → expiry, first claim time, duplicate count, payload hash, digest of the attempt
 * id`, expiring with the key's remaining life. A claim that finds a live entry which PostgreSQL would answer
 * `duplicate` for (no payload-hash conflict, not the attempt that made the key) is answered `duplicate`
 * without PostgreSQL; the duplicate is counted in memory like any other (claim_counts, GET /metrics) and
 * added to the key's duplicate_count by a batched statement every few seconds. Anything else — a miss, an
 * in-flight key, a possible repeat or mismatch, an error, a command slower than KEYWARD_REDIS_TIMEOUT_MS —
 * goes to PostgreSQL as without Redis. Redis never answers `claimed`. A server asks Redis only for a source
 * whose recent claims were often duplicates (PROBE_MIN_SHARE), and writes entries in small batches: both only
 * ever send a claim to PostgreSQL that Redis could have answered, never the other way round.
 *
 * Why an entry never answers `duplicate` for a key PostgreSQL would not (docs/reliability.md, "Redis"):
 * - Expiry: an entry expires before its key: its PX is the key's remaining life by the database clock
 *   (expires_at − the statement's now()), less the time since the statement was sent, less a margin.
 * - Only `done` keys are remembered; a `done` key changes only by expiring (above), being released (below),
 *   or being extended (it lives longer than its entry: a miss, never a wrong answer). Completing, lease
 *   takeovers and in-flight answers concern `processing` keys, which are never remembered.
 * - Release: the releasing server writes a tombstone and deletes the entry (one script) BEFORE the release
 *   statement; an entry write that reaches Redis while the tombstone lives is refused, and every write must
 *   execute within WRITE_DEADLINE_MS of being sent (checked against Redis's own clock in the script), far
 *   less than the tombstone's life. If Redis cannot be reached, the release instead moves every server to a
 *   new namespace (the `redis_epoch` setting, announced by NOTIFY) and answers only after the key cache's
 *   revocation bound has passed, when every server uses the new namespace or does not use Redis at all.
 *   A process that releases without a Redis connection of its own (the CLI) does the same.
 * - Entries are served only while the server's database listener is trusted (lib/auth/api-key-cache.ts),
 *   so a server that might have missed a namespace change never answers from Redis.
 * - The namespace also names the database (system identifier and database oid): two databases never share
 *   entries.
 */
import { processGlobal } from "../process-global";
import { createHash } from "node:crypto";
import Redis from "ioredis";
import { query } from "../db/sql";
import type { ClaimRow, ClaimInput } from "./classify";
import type { ClaimResult } from "./schema";
import { cacheTrusted, keepListenerAwake, listenerEpoch, REVOCATION_BOUND_MS } from "../auth/api-key-cache";

/** An entry write that Redis executes later than this after it was sent is dropped by the script. */
const WRITE_DEADLINE_MS = 5_000;
/** Entries expire this much before their key, on top of the time the answer took. */
const EXPIRY_MARGIN_MS = 2_000;
/** Keys with less life left than this are not worth an entry. */
const MIN_ENTRY_MS = 5_000;
/** After this many failed or slow commands in a row, Redis is skipped for BREAKER_MS. */
const BREAKER_FAILURES = 3;
const BREAKER_MS = 1_000;
const FLUSH_MS = 5_000;
/** Entry writes wait this long to go out together (one pipeline for the claims answered meanwhile). */
const WRITE_BATCH_MS = 10;
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
/** Releases wait this long for the tombstone and delete. */
const INVALIDATE_TIMEOUT_MS = 1_000;

/**
 * Sets entries, each unless its key's tombstone lives or its write is past its deadline (Redis clock).
 * KEYS: entry, tombstone, entry, tombstone, …; ARGV: value, life (ms), deadline (ms), … for each entry.
 */
const WRITE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local written = 0
for i = 1, #KEYS, 2 do
  local a = (i - 1) / 2 * 3
  if now <= tonumber(ARGV[a + 3]) and redis.call('EXISTS', KEYS[i + 1]) == 0 then
    redis.call('SET', KEYS[i], ARGV[a + 1], 'PX', ARGV[a + 2])
    written = written + 1
  end
end
return written`;
const INVALIDATE_SCRIPT = `
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
redis.call('DEL', KEYS[1])
return 1`;

export type Entry = { key: string; expiresAt: number; receivedAt: number; duplicateCount: number; payloadHash: string; attempt: string };

type State = {
  client?: Redis;
  invalidator?: Redis;
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
  pendingDuplicates: Map<string, { source: string; eventId: string; n: number }>;
  /** Entry writes waiting for the next batch (WRITE_BATCH_MS). */
  pendingWrites: { key: string; tomb: string; value: string; life: number; deadline: number }[];
  writeTimer?: NodeJS.Timeout;
  /** Per source: the recent share of duplicates among its claims' answers (see PROBE_MIN_SHARE). */
  duplicateShare: Map<string, number>;
  timers: NodeJS.Timeout[];
  stats: { hits: number; misses: number; skipped: number; errors: number; writes: number };
};

const state: State = processGlobal("redis", (): State => ({
  offset: 0,
  dbOffset: 0,
  tombstoneMs: 60_000,
  failures: 0,
  breakerUntil: 0,
  pendingDuplicates: new Map(),
  pendingWrites: [],
  duplicateShare: new Map(),
  timers: [],
  stats: { hits: 0, misses: 0, skipped: 0, errors: 0, writes: 0 },
}));

export type RedisOptions = { url: string; timeoutMs: number; statementTimeoutMs: number; connectTimeoutMs: number; log: (m: string) => void };

/** Connects (in the background: claims go to PostgreSQL until it is ready). */
export async function startRedis(o: RedisOptions): Promise<void> {
  const asked = Date.now();
  const [db] = await query<{ id: string; db_now: Date }>(
    "SELECT (SELECT system_identifier FROM pg_control_system())::text || '.' || (SELECT oid FROM pg_database WHERE datname = current_database())::text AS id, clock_timestamp() AS db_now",
  );
  state.dbOffset = db.db_now.getTime() - (asked + Date.now()) / 2;
  state.database = createHash("sha256").update(db.id).digest("base64url").slice(0, 12);
  state.tombstoneMs = Math.max(60_000, 2 * (o.statementTimeoutMs + o.connectTimeoutMs + 1000 + WRITE_DEADLINE_MS));
  const options = {
    commandTimeout: o.timeoutMs,
    enableOfflineQueue: false, // a command while disconnected fails at once
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: (times: number) => Math.min(100 * times, 2000),
    lazyConnect: false,
  };
  // Commands issued in the same tick (concurrent claims' reads, entry writes) go out in one write.
  state.client = new Redis(o.url, { ...options, enableAutoPipelining: true });
  state.invalidator = new Redis(o.url, { ...options, commandTimeout: INVALIDATE_TIMEOUT_MS });
  let lastError = "";
  for (const c of [state.client, state.invalidator]) {
    c.on("error", (err: Error) => {
      if (err.message !== lastError) o.log(`Redis: ${err.message} (claims go to PostgreSQL meanwhile)`);
      lastError = err.message;
    });
    c.on("ready", () => {
      lastError = "";
      void measureOffset(c);
    });
  }
  state.client.defineCommand("keywardWrite", { lua: WRITE_SCRIPT }); // numkeys is its first argument
  state.invalidator.defineCommand("keywardInvalidate", { numberOfKeys: 2, lua: INVALIDATE_SCRIPT });
  const offsetTimer = setInterval(() => state.client && void measureOffset(state.client), 60_000);
  const flushTimer = setInterval(() => void flushRedisDuplicates().catch(() => {}), FLUSH_MS);
  offsetTimer.unref();
  flushTimer.unref();
  state.timers.push(offsetTimer, flushTimer);
}

export async function stopRedis(): Promise<void> {
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
  clearTimeout(state.writeTimer);
  state.writeTimer = undefined;
  state.pendingWrites = [];
  await flushRedisDuplicates().catch(() => {});
  const clients = [state.client, state.invalidator];
  state.client = state.invalidator = undefined;
  for (const c of clients) c?.disconnect();
}

async function measureOffset(c: Redis): Promise<void> {
  try {
    const before = Date.now();
    const [s, us] = await c.time();
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

/** Whether this process uses Redis now (configured, connected, not tripped, its namespace known). */
export function redisActive(): boolean {
  if (!state.client) return false;
  keepListenerAwake();
  return state.client.status === "ready" && performance.now() >= state.breakerUntil && cacheTrusted() && listenerEpoch() !== undefined;
}

export function redisStats(): State["stats"] {
  return state.stats;
}

const keyOf = (source: string, eventId: string) => `kw:${state.database}:${listenerEpoch()}:k:${source}/${eventId}`;
const tombOf = (source: string, eventId: string) => `kw:${state.database}:${listenerEpoch()}:t:${source}/${eventId}`;
const digest = (attemptId: string) => createHash("sha256").update(attemptId).digest("base64url").slice(0, 22);

/**
 * A command failed or timed out. Its reply may still come, or never (a black-holed network): either way the
 * connection's replies could no longer be paired with its commands, so it is replaced.
 */
function failed(client?: Redis): void {
  state.stats.errors++;
  client?.disconnect(true);
  if (++state.failures >= BREAKER_FAILURES) {
    state.failures = 0;
    state.breakerUntil = performance.now() + BREAKER_MS;
  }
}

/** An entry is `<source>/<event id>` NUL expiry|first claim|duplicates|payload hash|attempt digest. */
function parse(value: string | null): Entry | null {
  if (!value) return null;
  const nul = value.indexOf("\0");
  if (nul < 0) return null;
  const [expiresAt, receivedAt, duplicateCount, payloadHash, attempt] = value.slice(nul + 1).split("|");
  return { key: value.slice(0, nul), expiresAt: Number(expiresAt), receivedAt: Number(receivedAt), duplicateCount: Number(duplicateCount), payloadHash, attempt };
}

/** Whether PostgreSQL would answer `duplicate` to this request for the key an entry describes. */
function answersDuplicate(e: Entry, input: ClaimInput): boolean {
  if (e.payloadHash && input.payloadHash && e.payloadHash !== input.payloadHash) return false; // payload_mismatch
  if (e.attempt && input.attemptId && e.attempt === digest(input.attemptId)) return false; // a repeat: claimed again
  return true;
}

/**
 * The events of this request that Redis can answer `duplicate` for, by event id (every occurrence of the id
 * must qualify). Empty on a miss, an error or a timeout: those go to PostgreSQL.
 */
export async function redisDuplicates(source: string, events: readonly ClaimInput[]): Promise<Map<string, Entry>> {
  const hits = new Map<string, Entry>();
  if (!redisActive()) return hits;
  if ((state.duplicateShare.get(source) ?? PROBE_START_SHARE) < PROBE_MIN_SHARE) {
    state.stats.skipped += events.length;
    return hits;
  }
  const ids = [...new Set(events.map((e) => e.eventId))];
  let values: (string | null)[];
  try {
    values = ids.length === 1 ? [await state.client!.get(keyOf(source, ids[0]))] : await state.client!.mget(ids.map((id) => keyOf(source, id)));
    state.failures = 0;
  } catch {
    failed(state.client);
    return hits;
  }
  const now = Date.now();
  ids.forEach((id, i) => {
    const e = parse(values[i]);
    // The entry names its key: an answer that belongs to another command is never taken for this one.
    if (e && e.key === `${source}/${id}` && e.expiresAt > now) hits.set(id, e);
  });
  for (const input of events) {
    const e = hits.get(input.eventId);
    if (e && !answersDuplicate(e, input)) hits.delete(input.eventId);
  }
  state.stats.hits += hits.size;
  state.stats.misses += ids.length - hits.size;
  return hits;
}

/** The answer to one occurrence of an event Redis answers for (`nth`: 1 for its first in the request). */
export function duplicateFromEntry(source: string, eventId: string, e: Entry, nth: number): ClaimResult {
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

/**
 * Learns from a claim's answers (from Redis or PostgreSQL) how often this source's claims are duplicates:
 * what decides whether its next claims ask Redis first.
 */
export function noteClaimAnswers(source: string, duplicates: number, answers: number): void {
  let share = state.duplicateShare.get(source) ?? PROBE_START_SHARE;
  for (let i = 0; i < answers; i++) share += ((i < duplicates ? 1 : 0) - share) * SHARE_WEIGHT;
  state.duplicateShare.set(source, share);
}

/**
 * The age, in seconds on the database's clock, of a duplicate Redis answers now: the key's first claim
 * (the entry's received_at, a database time) to the database's now() as this server estimates it. Off by
 * at most about half a claim's round trip, far below the histogram's smallest bucket (1 s).
 */
export function redisDuplicateAge(e: Entry): number {
  return Math.max(0, (Date.now() + state.dbOffset - e.receivedAt) / 1000);
}

/** Adds duplicates answered from Redis to their keys' duplicate_count, at the next flush. */
export function countRedisDuplicate(source: string, eventId: string, n: number): void {
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
    await query(
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
 * Remembers the `done` keys of a claim statement's rows (off the hot path: not awaited by the caller).
 * `sentAt`: Date.now() when the statement was sent.
 */
export function rememberClaimRows(source: string, rows: readonly ClaimRow[], sentAt: number): void {
  const now = Date.now();
  if (rows.length > 0) state.dbOffset = rows[0].db_now.getTime() - (sentAt + now) / 2;
  if (!redisActive()) return;
  // Checked by the script against Redis's clock: a write executed later than this is dropped. The entry's
  // life already leaves out WRITE_DEADLINE_MS, so however long it waits in the batch, it expires before its key.
  const deadline = Math.floor(now + state.offset + WRITE_DEADLINE_MS);
  for (const r of rows) {
    if (r.status !== "done") continue;
    const life = r.expires_at.getTime() - r.db_now.getTime() - (now - sentAt) - EXPIRY_MARGIN_MS - WRITE_DEADLINE_MS;
    if (life < MIN_ENTRY_MS) continue;
    const value = `${source}/${r.event_id}\0` + [
      r.expires_at.getTime(),
      r.received_at.getTime(),
      r.duplicate_count,
      r.payload_hash ?? "",
      r.attempt_id ? digest(r.attempt_id) : "",
    ].join("|");
    state.pendingWrites.push({ key: keyOf(source, r.event_id), tomb: tombOf(source, r.event_id), value, life: Math.floor(life), deadline });
  }
  if (state.pendingWrites.length >= WRITE_BATCH_MAX) writePending();
  else if (state.pendingWrites.length > 0 && !state.writeTimer) state.writeTimer = setTimeout(writePending, WRITE_BATCH_MS);
}

/** Sends the waiting entry writes in one script call. */
function writePending(): void {
  clearTimeout(state.writeTimer);
  state.writeTimer = undefined;
  const batch = state.pendingWrites;
  state.pendingWrites = [];
  if (batch.length === 0 || !redisActive()) return;
  const client = state.client as Redis & { keywardWrite: (...args: (string | number)[]) => Promise<number> };
  const keys = batch.flatMap((w) => [w.key, w.tomb]);
  const args = batch.flatMap((w) => [w.value, w.life, w.deadline]);
  state.stats.writes += batch.length;
  client.keywardWrite(keys.length, ...keys, ...args).catch(() => failed(client));
}

/**
 * Before a release: tombstone and delete the key's entry. Resolves `null` when done (or Redis is not
 * configured and never was), otherwise a `finish` to await before answering: the namespace was moved
 * instead (every server stops using the old entries within the revocation bound).
 */
export async function forgetBeforeRelease(source: string, eventId: string): Promise<null | (() => Promise<void>)> {
  const inv = state.invalidator as (Redis & { keywardInvalidate: (...args: (string | number)[]) => Promise<number> }) | undefined;
  if (inv && inv.status === "ready" && listenerEpoch() !== undefined) {
    try {
      await inv.keywardInvalidate(keyOf(source, eventId), tombOf(source, eventId), state.tombstoneMs);
      return null;
    } catch {
      failed(inv);
    }
  }
  return moveNamespace();
}

/**
 * Moves every server to a new Redis namespace, unless no server ever used Redis with this database (no
 * `redis_epoch` setting). The returned function waits until the revocation bound has passed since.
 */
async function moveNamespace(): Promise<null | (() => Promise<void>)> {
  const rows = await query<{ value: string }>(
    `WITH bumped AS (
       UPDATE settings SET value = (value::bigint + 1)::text, updated_at = now() WHERE key = 'redis_epoch' RETURNING value)
     SELECT value, pg_notify('keyward_api_keys', 'redis-epoch:' || value) FROM bumped`,
  );
  if (rows.length === 0) return null;
  const since = performance.now();
  return () => new Promise((resolve) => setTimeout(resolve, Math.max(0, REVOCATION_BOUND_MS - (performance.now() - since))));
}

/** Marks this database as one Redis is used with (the first server with KEYWARD_REDIS_URL does it). */
export async function registerRedisUse(): Promise<void> {
  await query("INSERT INTO settings (key, value) VALUES ('redis_epoch', '1') ON CONFLICT (key) DO NOTHING");
}
