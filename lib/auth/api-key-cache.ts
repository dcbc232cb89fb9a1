/**
 * The in-process API-key cache: a verified key is remembered, so an HTTP claim is one database round trip
 * (the claim) instead of two (the key, then the claim). Only `keyward start` turns it on
 * (startApiKeyListener); anywhere else (tests calling routes, the CLI) every key is read from the database.
 *
 * The revocation bound: a key revoked (or changed or deleted) by any process on the database is refused by
 * every process within REVOCATION_BOUND_MS of the change's commit. How:
 *
 * - A trigger on api_keys (migration 20261205050000_api_key_notify) sends NOTIFY keyward_api_keys with the
 *   key's id on every change that matters (not the last_used_at stamp), as part of the changing transaction.
 * - Each process holds one dedicated connection (not from the pool) that LISTENs on that channel and evicts
 *   the key it names. PostgreSQL delivers notifications in commit order.
 * - The same connection sends itself a ping (NOTIFY on a channel of its own) every PING_MS while the cache
 *   is in use. When a ping sent at S comes back, every notification committed before S has come back before
 *   it. The cache trusts itself only while the latest returned ping was sent less than TRUST_MS ago: a
 *   change committed at T is then evicted before any lookup at T + TRUST_MS or later is answered from
 *   memory. A stalled, black-holed or dead listener stops returning pings, and the cache stops trusting
 *   itself TRUST_MS later at most: lookups read the database (as without a cache) until it has listened
 *   again and a ping has come back. Every (re)LISTEN empties the cache (notifications sent while nobody
 *   listened are lost).
 * - A lookup that read the database stores its answer only if no eviction happened while it read
 *   (`generation`): a revocation committed after the read's snapshot is either evicted later or prevents
 *   the store.
 * - Behind PgBouncer in transaction pooling, LISTEN does not work (the LISTENing server session is shared
 *   and changes under the client). The listener connects to KEYWARD_MIGRATE_DATABASE_URL when it is set (a
 *   direct URL, as migrations need), otherwise to DATABASE_URL; before trusting itself it requires one
 *   notification sent from a pool connection (another session) to arrive, and it refuses to trust a
 *   connection whose backend pid changes between pings. A pooled listener therefore never trusts itself
 *   (every key is read, as before), and start-up logs how to fix it. KEYWARD_API_KEY_CACHE=off turns the
 *   cache off outright.
 *
 * The same listener carries the Redis first line's namespace generation (settings.redis_epoch, read on each
 * LISTEN, updated by `redis-epoch:<n>` notifications): lib/claims/redis.ts serves entries only while this
 * cache may be trusted.
 *
 * State is process-wide (lib/process-global.ts): Next's route bundles and the server's own modules are separate module
 * instances in one process and must share one cache.
 */
import { processGlobal } from "@/lib/process-global";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { startHeartbeat, type Heartbeat } from "@/lib/jobs/heartbeat";
import type { ApiKeyPrincipal } from "./principal";

/** A change committed at T is never honoured by a lookup at T + REVOCATION_BOUND_MS or later. */
export const REVOCATION_BOUND_MS = 1000;
/** The cache answers from memory only while the latest returned ping was sent less than this long ago. */
export const TRUST_MS = 750;
/** How often the listener pings itself while the cache is in use. */
export const PING_MS = 200;
/** Pings stop when the cache has not been consulted for this long (an idle server writes nothing). */
const IDLE_MS = 10_000;
const MAX_ENTRIES = 10_000;
/** An entry is re-read at least this often whatever happens (bounds what a missed eviction could cost). */
const MAX_ENTRY_AGE_MS = 10 * 60_000;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

export const API_KEYS_CHANNEL = "keyward_api_keys";

export type CachedKey = { keyHash: Buffer; principal: ApiKeyPrincipal; cachedAt: number; stampedAt: number };

type Listener = { stop: () => Promise<void> };

type State = {
  entries: Map<string, CachedKey>;
  /** Bumped by every eviction, every (re)LISTEN and every loss of the listener. */
  generation: number;
  /** performance.now() when the latest returned ping was sent; -Infinity while none counts. */
  confirmedSentAt: number;
  /** A notification from another session arrived since the current LISTEN (proof it is not pooled). */
  crossChecked: boolean;
  lastUsed: number;
  listener?: Listener;
  /** Whether verified keys are remembered (KEYWARD_API_KEY_CACHE); the listener may run for Redis alone. */
  cacheKeys: boolean;
  /** The Redis namespace generation (settings.redis_epoch), read on each LISTEN and updated by NOTIFY. */
  redisEpoch?: string;
  hits: number;
  misses: number;
};

const state: State = processGlobal("apiKeyCache", (): State => ({
  entries: new Map(),
  generation: 0,
  confirmedSentAt: -Infinity,
  crossChecked: false,
  lastUsed: 0,
  cacheKeys: false,
  hits: 0,
  misses: 0,
}));

/** Whether lookups may be answered from memory now. */
export function cacheTrusted(now = performance.now()): boolean {
  return state.listener !== undefined && state.crossChecked && now - state.confirmedSentAt < TRUST_MS;
}

/** Keeps the listener's pings going (they stop after IDLE_MS without use), for users other than the key cache. */
export function keepListenerAwake(): void {
  state.lastUsed = performance.now();
}

/** The cached key with this id, when the cache may be trusted; counts a hit or a miss. */
export function cachedApiKey(id: string): CachedKey | undefined {
  const now = performance.now();
  state.lastUsed = now;
  const entry = cacheTrusted(now) ? state.entries.get(id) : undefined;
  if (entry && now - entry.cachedAt < MAX_ENTRY_AGE_MS) {
    state.hits++;
    return entry;
  }
  state.misses++;
  return undefined;
}

/** The current generation: take it before reading a key, pass it to rememberApiKey after. */
export function cacheGeneration(): number {
  return state.generation;
}

/** Stores a key read from the database, unless anything was evicted since `generation` was taken. */
export function rememberApiKey(id: string, entry: Omit<CachedKey, "cachedAt">, generation: number): void {
  if (state.listener === undefined || !state.cacheKeys || generation !== state.generation) return;
  if (state.entries.size >= MAX_ENTRIES) state.entries.delete(state.entries.keys().next().value!);
  state.entries.set(id, { ...entry, cachedAt: performance.now() });
}

/** Evicts one key (or every key: `*`). Called on each notification, and by this process's own revocations. */
export function forgetApiKey(id: string): void {
  state.generation++;
  if (id === "*") state.entries.clear();
  else state.entries.delete(id);
}

/** The Redis namespace generation this process knows (undefined: none yet, or no listener). */
export function listenerEpoch(): string | undefined {
  return state.listener ? state.redisEpoch : undefined;
}

export function apiKeyCacheStats(): { trusted: boolean; entries: number; hits: number; misses: number } {
  return { trusted: cacheTrusted(), entries: state.entries.size, hits: state.hits, misses: state.misses };
}

function distrust(): void {
  state.generation++;
  state.entries.clear();
  state.confirmedSentAt = -Infinity;
  state.crossChecked = false;
}

export type ListenerOptions = {
  /** A direct (not transaction-pooled) URL of the database. */
  url: string;
  /** Sends the cross-session check from another session (a pool connection). */
  crossSession: (sql: string, values: unknown[]) => Promise<unknown>;
  log: (message: string) => void;
  connectTimeoutMs: number;
  /** Remember verified keys (false: the listener serves the Redis first line only). */
  cacheKeys: boolean;
};

/**
 * Starts the listener connection (and reconnects it whenever it is lost, with backoff). Until it listens,
 * and whenever it has not confirmed a ping within TRUST_MS, every key is read from the database.
 */
export function startApiKeyListener(options: ListenerOptions): Listener {
  if (state.listener) return state.listener;
  state.cacheKeys = options.cacheKeys;
  const pingChannel = `keyward_key_cache_${randomBytes(6).toString("hex")}`;
  let client: pg.Client | undefined;
  let stopped = false;
  let reconnectDelay = RECONNECT_MIN_MS;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let pinging: Heartbeat | undefined;
  let warnTimer: NodeJS.Timeout | undefined;
  let seq = 0;
  const sent = new Map<number, number>();
  let pid = 0;
  let warned = false;

  const lost = (why: string) => {
    if (!client) return;
    const c = client;
    client = undefined;
    void pinging?.stop();
    clearTimeout(warnTimer);
    distrust();
    c.removeAllListeners("notification");
    c.on("error", () => {});
    void c.end().catch(() => {});
    if (stopped) return;
    options.log(`API-key cache: listener connection lost (${why}); reading keys from the database until it listens again`);
    reconnectTimer = setTimeout(connect, reconnectDelay);
    reconnectTimer.unref();
    reconnectDelay = Math.min(RECONNECT_MAX_MS, reconnectDelay * 2);
  };

  const onNotification = (msg: pg.Notification) => {
    if (msg.channel === API_KEYS_CHANNEL) {
      if (msg.payload?.startsWith("check:")) {
        if (msg.payload === `check:${pingChannel}`) state.crossChecked = true;
        return;
      }
      if (msg.payload?.startsWith("redis-epoch:")) {
        state.redisEpoch = msg.payload.slice("redis-epoch:".length);
        return;
      }
      forgetApiKey(msg.payload || "*");
      return;
    }
    if (msg.channel !== pingChannel) return;
    const n = Number(msg.payload);
    const at = sent.get(n);
    if (at === undefined) return;
    for (const k of sent.keys()) if (k <= n) sent.delete(k);
    state.confirmedSentAt = Math.max(state.confirmedSentAt, at);
  };

  const ping = async (c: pg.Client) => {
    if (performance.now() - state.lastUsed > IDLE_MS && state.crossChecked) return;
    const n = ++seq;
    sent.set(n, performance.now());
    if (sent.size > 50) sent.delete(sent.keys().next().value!);
    try {
      const { rows } = await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid, pg_notify($1, $2)", [pingChannel, String(n)]);
      if (rows[0].pid !== pid) {
        // Another server session answered: a transaction-pooling proxy is in between.
        warnPooled();
        lost("its backend changed: a transaction-pooling proxy?");
        return;
      }
      if (!state.crossChecked) await options.crossSession("SELECT pg_notify($1, $2)", [API_KEYS_CHANNEL, `check:${pingChannel}`]);
    } catch (err) {
      if (client === c) lost((err as Error).message);
    }
  };

  const warnPooled = () => {
    if (warned) return;
    warned = true;
    options.log(
      "API-key cache off: its listener does not receive notifications from other sessions (PgBouncer in transaction " +
        "mode?); every request reads its API key from the database. Set KEYWARD_MIGRATE_DATABASE_URL to a direct URL " +
        "of the database (the listener uses it), or KEYWARD_API_KEY_CACHE=off to silence this",
    );
  };

  async function connect(): Promise<void> {
    if (stopped) return;
    const c = new pg.Client({
      connectionString: options.url,
      // Named with the pid, so an operator (or a test) can tell the servers' listeners apart in pg_stat_activity.
      application_name: `keyward-key-listener-${process.pid}`,
      connectionTimeoutMillis: options.connectTimeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // A query of this connection (a ping) that gets no answer means the listener is gone.
      query_timeout: TRUST_MS * 4,
    });
    c.on("error", (err) => lost(err.message));
    c.on("end", () => lost("connection ended"));
    c.on("notification", onNotification);
    try {
      await c.connect();
      client = c;
      await c.query(`LISTEN ${API_KEYS_CHANNEL}`);
      await c.query(`LISTEN ${pingChannel}`);
      pid = (await c.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0].pid;
      // After LISTEN: a change committed later is notified, one committed earlier is read here.
      const epoch = await c.query<{ value: string }>("SELECT value FROM settings WHERE key = 'redis_epoch'");
      state.redisEpoch = epoch.rows[0]?.value;
    } catch (err) {
      if (client === c) lost((err as Error).message);
      else {
        c.removeAllListeners();
        c.on("error", () => {});
        void c.end().catch(() => {});
        reconnectTimer = setTimeout(connect, reconnectDelay);
        reconnectTimer.unref();
        reconnectDelay = Math.min(RECONNECT_MAX_MS, reconnectDelay * 2);
      }
      return;
    }
    if (client !== c) return;
    // Everything evicted while nobody listened is unknown: start empty.
    distrust();
    reconnectDelay = RECONNECT_MIN_MS;
    // A heartbeat of this connection (lib/jobs/heartbeat.ts): a ping at once, then every PING_MS. The beat
    // only sends: pings may be in flight together (each returned one confirms its own send time), so a
    // slow round trip never spaces the pings out and the trust window stays what TRUST_MS says.
    pinging = startHeartbeat(PING_MS, async () => void ping(c), { now: true });
    warnTimer = setTimeout(() => {
      if (client === c && !state.crossChecked) warnPooled();
    }, 10_000);
    warnTimer.unref();
  }

  const listener: Listener = {
    stop: async () => {
      stopped = true;
      clearTimeout(reconnectTimer);
      void pinging?.stop();
      clearTimeout(warnTimer);
      const c = client;
      client = undefined;
      state.listener = undefined;
      distrust();
      if (c) {
        c.removeAllListeners();
        c.on("error", () => {});
        await c.end().catch(() => {});
      }
    },
  };
  state.listener = listener;
  void connect();
  return listener;
}
