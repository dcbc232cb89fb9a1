/**
 * The scenarios. Each is one kind of request (an `Op`) at one concurrency and batch size; scenarios of
 * the same shape form a block that always contains (a), the raw-pg baseline, so every ratio compares
 * figures measured within about a second of each other.
 *
 *   raw     (a)  pg.Pool running the library's claim statement (CLAIM_ONE_SQL for one event, CLAIM_SQL for a
 *                batch), the exact statement and parameters the library sends
 *   minimal (m)  the design's minimal claim: one statement, INSERT … ON CONFLICT DO NOTHING RETURNING into
 *                dedup_keys and the audit row in audit_events (same tables, same indexes), prepared
 *   control      (a) again on a second, identical pool: what the method itself reads for "no difference"
 *   rawNamed     the same statement unprepared (plain text): parsed and planned on every call
 *   rawFresh     the same on a pool created anew for each slice: new connections to new backends
 *   bare    (a′) INSERT INTO dedup_keys … ON CONFLICT DO NOTHING RETURNING: the design's bare claim on
 *                the same table and indexes, without the audit row, CTEs, source lookup or merge function
 *   lib     (b)  claimEvent / claimEvents in-process (zod, batch dedupe, classify, counters, shared pool)
 *   http    (c)  POST /api/v1/claims(/batch) against the running server, Bearer API key, keep-alive
 *   *Dup         the same, claiming an event already claimed (the ON CONFLICT DO UPDATE path)
 *   prisma       prisma.$queryRawUnsafe(CLAIM_SQL, …) on the pool Prisma shares with the library
 *   verify       verifyApiKey in-process: the one extra read each HTTP request makes
 *   http401      HTTP with a malformed key: Next routing + route wrapper, no database at all
 *   http422      HTTP with a valid key and an empty body: + key verification + body read + zod
 */
import type pg from "pg";
import { claimEvent, claimEvents, claimStatement, claimStatementParams } from "@/lib/claims/claim";
import { verifyApiKey } from "@/lib/auth/api-keys";
import { prisma } from "@/lib/db/client";
import type { ClaimResult } from "@/lib/claims/schema";
import type { Op } from "./drive";
import type { JsonResponse } from "./http-client";

export type HttpClient = { post: (path: string, body: string) => Promise<JsonResponse> };

export type Kind =
  | "raw"
  | "control"
  | "rawNamed"
  | "rawFresh"
  | "bare"
  | "minimal"
  | "lib"
  | "http"
  | "httpNodeClient"
  | "httpRedis"
  | "httpStorm"
  | "httpStormRedis"
  | "rawDup"
  | "httpDup"
  | "prisma"
  | "verify"
  | "http401"
  | "http422";

/** Where a scenario is reported: the main table, the same statement through other drivers, or the HTTP cost split. */
export type Table = "main" | "driver" | "split";

export type Cell = {
  id: string;
  kind: Kind;
  label: string;
  clients: number;
  batch: number;
  table: Table;
  op: Op;
  /** Runs untimed before each slice of this scenario. */
  beforeSlice?: () => Promise<void>;
};
export type Block = { name: string; clients: number; batch: number; cells: Cell[] };

export type BenchContext = {
  source: string;
  ttlSeconds: number;
  rawPool: pg.Pool;
  /** A second pool configured exactly like rawPool. */
  controlPool: pg.Pool;
  /** A new pool like rawPool, and its end: for the fresh-connections scenario. */
  newPool: () => pg.Pool;
  endPool: (pool: pg.Pool) => Promise<void>;
  apiKey: string;
  /** A keep-alive client per concurrency level (with the API key), and one with a malformed key. */
  http: (clients: number) => HttpClient;
  httpBadKey: (clients: number) => HttpClient;
  /** The same as `http`, through node:http's client (what the HTTP rows used before lean-client.ts). */
  httpNode: (clients: number) => HttpClient;
  /** A client of a second server, started with KEYWARD_REDIS_URL (undefined: no Redis on this machine). */
  httpRedis?: (clients: number) => HttpClient;
  /** Event ids claimed during setup, for the duplicate scenarios. */
  claimedIds: readonly string[];
};

const EVENT_TYPE = "invoice.paid";
const ACTOR = "library"; // what the library records when no actor is given: (a) sends the same parameters

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** A fresh Stripe-like event id (evt_ + 24 random base62 characters): every claim is a first claim. */
export function newEventId(): string {
  let s = "evt_";
  for (let i = 0; i < 24; i++) s += ALPHABET[(Math.random() * 62) | 0];
  return s;
}

const newIds = (n: number) => Array.from({ length: n }, newEventId);

/** CLAIM_SQL's (and CLAIM_PARTITIONED_SQL's) parameters for these ids (no hashes, no repeats, no lease). */
export function claimParams(source: string, ids: readonly string[]): unknown[] {
  const distinct = ids.map((eventId) => ({ first: { eventId, eventType: EVENT_TYPE }, repeats: 0 }));
  return claimStatementParams(source, distinct, null, ACTOR);
}

/**
 * The claim statement and parameters lib/claims/claim.ts sends for these ids in single-table mode, or in
 * partition mode (no hashes, no repeats, no lease), as a pg query config: prepared (named) unless `unnamed`.
 */
export function claimQuery(
  source: string,
  ids: readonly string[],
  unnamed = false,
  mode: "single" | "partition" = "single",
): { name?: string; text: string; values: unknown[] } {
  const distinct = ids.map((eventId) => ({ first: { eventId, eventType: EVENT_TYPE }, repeats: 0 }));
  const { sql, params } = claimStatement(source, distinct, null, ACTOR, mode);
  return unnamed ? { text: sql.text, values: params } : { ...sql, values: params };
}

/**
 * The design's minimal claim (issue 15): the key and its audit row in one statement, nothing else: no source
 * lookup (the TTL is a parameter), no merge on conflict, no detail, only the event id returned.
 */
export const MINIMAL_SQL = { name: "bench_minimal_claim", text: `
WITH k AS (
  INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
  SELECT $1, e.event_id, e.event_type, 'done', gen_random_uuid(), 'claimed', now() + make_interval(secs => $4::int)
  FROM unnest($2::text[], $3::text[]) AS e(event_id, event_type)
  ON CONFLICT DO NOTHING
  RETURNING source, event_id, event_type, claim_kind)
INSERT INTO audit_events (source, event_id, event_type, kind, actor)
SELECT source, event_id, event_type, claim_kind, $5 FROM k
RETURNING event_id` };

/** Its single-event form (VALUES, no unnest). */
export const MINIMAL_SINGLE_SQL = { name: "bench_minimal_claim_one", text: `
WITH k AS (
  INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
  VALUES ($1, $2, $3, 'done', gen_random_uuid(), 'claimed', now() + make_interval(secs => $4::int))
  ON CONFLICT DO NOTHING
  RETURNING source, event_id, event_type, claim_kind)
INSERT INTO audit_events (source, event_id, event_type, kind, actor)
SELECT source, event_id, event_type, claim_kind, $5 FROM k
RETURNING event_id` };

export const BARE_SQL = `
INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
SELECT $1, e.event_id, e.event_type, 'done', gen_random_uuid(), 'claimed', now() + make_interval(secs => $4::int)
FROM unnest($2::text[], $3::text[]) AS e(event_id, event_type)
ON CONFLICT DO NOTHING
RETURNING event_id`;

/** The single-event form, exactly the design's statement shape (VALUES, no unnest). */
export const BARE_SINGLE_SQL = `
INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
VALUES ($1, $2, $3, 'done', gen_random_uuid(), 'claimed', now() + make_interval(secs => $4::int))
ON CONFLICT DO NOTHING
RETURNING event_id`;

function expect(ok: boolean, what: string, got: unknown): void {
  if (!ok) throw new Error(`${what}: unexpected answer ${JSON.stringify(got).slice(0, 300)}`);
}

const allClaimed = (results: readonly ClaimResult[], n: number) =>
  results.length === n && results.every((r) => r.outcome === "claimed");

function pick<T>(items: readonly T[]): T {
  return items[(Math.random() * items.length) | 0];
}

/** CLAIM_SQL on a pool replaced before every slice, so each slice runs on newly started backends. */
function freshConnections(batch: number, ctx: BenchContext): Pick<Cell, "op" | "beforeSlice"> {
  let pool = ctx.newPool();
  return {
    op: async () => {
      const ids = newIds(batch);
      const r = await pool.query(claimQuery(ctx.source, ids));
      expect(r.rows.length === batch && r.rows.every((row) => row.claimed_now), "raw claim (fresh pool)", r.rows[0]);
    },
    beforeSlice: async () => {
      await ctx.endPool(pool);
      pool = ctx.newPool();
    },
  };
}

function op(kind: Kind, batch: number, clients: number, ctx: BenchContext): Op {
  const { source } = ctx;
  switch (kind) {
    case "rawFresh":
      throw new Error("rawFresh is built by freshConnections()");
    case "raw":
      return async () => {
        const ids = newIds(batch);
        const r = await ctx.rawPool.query(claimQuery(source, ids));
        expect(r.rows.length === batch && r.rows.every((row) => row.claimed_now), "raw claim", r.rows[0]);
      };
    case "control":
      return async () => {
        const ids = newIds(batch);
        const r = await ctx.controlPool.query(claimQuery(source, ids));
        expect(r.rows.length === batch && r.rows.every((row) => row.claimed_now), "raw claim (control)", r.rows[0]);
      };
    case "rawNamed":
      return async () => {
        const ids = newIds(batch);
        const r = await ctx.rawPool.query(claimQuery(source, ids, true));
        expect(r.rows.length === batch && r.rows.every((row) => row.claimed_now), "raw claim (unprepared)", r.rows[0]);
      };
    case "bare":
      return batch === 1
        ? async () => {
            const r = await ctx.rawPool.query(BARE_SINGLE_SQL, [source, newEventId(), EVENT_TYPE, ctx.ttlSeconds]);
            expect(r.rowCount === 1, "bare insert", r.rows);
          }
        : async () => {
            const ids = newIds(batch);
            const r = await ctx.rawPool.query(BARE_SQL, [source, ids, ids.map(() => EVENT_TYPE), ctx.ttlSeconds]);
            expect(r.rowCount === batch, "bare insert", r.rowCount);
          };
    case "minimal":
      return batch === 1
        ? async () => {
            const r = await ctx.rawPool.query({ ...MINIMAL_SINGLE_SQL, values: [source, newEventId(), EVENT_TYPE, ctx.ttlSeconds, ACTOR] });
            expect(r.rowCount === 1, "minimal claim", r.rows);
          }
        : async () => {
            const ids = newIds(batch);
            const r = await ctx.rawPool.query({ ...MINIMAL_SQL, values: [source, ids, ids.map(() => EVENT_TYPE), ctx.ttlSeconds, ACTOR] });
            expect(r.rowCount === batch, "minimal claim", r.rowCount);
          };
    case "lib":
      return batch === 1
        ? async () => {
            const r = await claimEvent({ source, eventId: newEventId(), eventType: EVENT_TYPE });
            expect(r.outcome === "claimed", "claimEvent", r);
          }
        : async () => {
            const events = newIds(batch).map((eventId) => ({ eventId, eventType: EVENT_TYPE }));
            const r = await claimEvents({ source, events });
            expect(allClaimed(r, batch), "claimEvents", r[0]);
          };
    case "http": {
      const client = ctx.http(clients);
      return batch === 1
        ? async () => {
            const body = JSON.stringify({ source, eventId: newEventId(), eventType: EVENT_TYPE });
            const r = await client.post("/api/v1/claims", body);
            expect(r.status === 201, "POST /api/v1/claims", r);
          }
        : async () => {
            const events = newIds(batch).map((eventId) => ({ eventId, eventType: EVENT_TYPE }));
            const r = await client.post("/api/v1/claims/batch", JSON.stringify({ source, events }));
            const results = (r.body as { results?: ClaimResult[] })?.results ?? [];
            expect(r.status === 200 && allClaimed(results, batch), "POST /api/v1/claims/batch", r.status === 200 ? results[0] : r);
          };
    }
    case "httpNodeClient": {
      const client = ctx.httpNode(clients);
      return async () => {
        const body = JSON.stringify({ source, eventId: newEventId(), eventType: EVENT_TYPE });
        const r = await client.post("/api/v1/claims", body);
        expect(r.status === 201, "POST /api/v1/claims (node:http client)", r);
      };
    }
    case "httpRedis": {
      const client = ctx.httpRedis!(clients);
      return async () => {
        const body = JSON.stringify({ source, eventId: newEventId(), eventType: EVENT_TYPE });
        const r = await client.post("/api/v1/claims", body);
        expect(r.status === 201, "POST /api/v1/claims (Redis on)", r);
      };
    }
    case "httpStorm":
    case "httpStormRedis": {
      // Every sender delivers each event 10 times: the first claim, then 9 retries (duplicates).
      const client = kind === "httpStorm" ? ctx.http(clients) : ctx.httpRedis!(clients);
      const senders = Array.from({ length: clients }, () => ({ id: "", sent: STORM }));
      let next = 0;
      return async () => {
        const s = senders[next++ % senders.length];
        if (s.sent === STORM) {
          s.id = newEventId();
          s.sent = 0;
        }
        s.sent++;
        // Two clients may carry one sender's deliveries at once: which of them claims is theirs to race for.
        const r = await client.post("/api/v1/claims", JSON.stringify({ source, eventId: s.id, eventType: EVENT_TYPE }));
        expect(r.status === 201 || r.status === 200, "POST /api/v1/claims (duplicate storm)", r);
      };
    }
    case "rawDup":
      return async () => {
        const r = await ctx.rawPool.query(claimQuery(source, [pick(ctx.claimedIds)]));
        expect(r.rows.length === 1 && !r.rows[0].claimed_now, "raw duplicate claim", r.rows[0]);
      };
    case "httpDup": {
      const client = ctx.http(clients);
      return async () => {
        const body = JSON.stringify({ source, eventId: pick(ctx.claimedIds), eventType: EVENT_TYPE });
        const r = await client.post("/api/v1/claims", body);
        expect(r.status === 200, "POST /api/v1/claims duplicate", r);
      };
    }
    case "prisma":
      return async () => {
        const ids = newIds(batch);
        const q = claimQuery(source, ids, true);
        const rows = await prisma().$queryRawUnsafe<{ claimed_now: boolean }[]>(q.text, ...q.values);
        expect(rows.length === batch && rows.every((row) => row.claimed_now), "prisma claim", rows[0]);
      };
    case "verify":
      return async () => {
        const p = await verifyApiKey(ctx.apiKey);
        expect(p !== null, "verifyApiKey", p);
      };
    case "http401": {
      const client = ctx.httpBadKey(clients);
      return async () => {
        const body = JSON.stringify({ source, eventId: newEventId(), eventType: EVENT_TYPE });
        const r = await client.post("/api/v1/claims", body);
        expect(r.status === 401, "POST /api/v1/claims with a malformed key", r);
      };
    }
    case "http422": {
      const client = ctx.http(clients);
      return async () => {
        const r = await client.post("/api/v1/claims", "{}");
        expect(r.status === 422, "POST /api/v1/claims with an empty body", r);
      };
    }
  }
}

/** Deliveries of each event in the duplicate storm (1 first claim + 9 retries). */
const STORM = 10;

const LABELS: Record<Kind, (batch: number) => string> = {
  raw: (b) => (b === 1 ? "(a) raw pg, CLAIM_ONE_SQL (prepared)" : "(a) raw pg, CLAIM_SQL (prepared)"),
  control: () => "(a) again on a second pool (control)",
  rawNamed: () => "raw pg, (a)'s statement unprepared (parsed and planned every call)",
  rawFresh: () => "raw pg, (a)'s statement on fresh connections",
  bare: () => "(a′) bare INSERT … ON CONFLICT DO NOTHING (no audit row, unprepared)",
  minimal: () => "(m) minimal claim: INSERT … ON CONFLICT DO NOTHING RETURNING + audit row (prepared)",
  lib: (b) => (b === 1 ? "(b) library claimEvent" : "(b) library claimEvents"),
  http: (b) => (b === 1 ? "(c) HTTP POST /api/v1/claims" : "(c) HTTP POST /api/v1/claims/batch"),
  httpNodeClient: () => "(c) the same, load from node:http's client",
  httpRedis: () => "(c-r) HTTP POST /api/v1/claims, Redis first line on (first claims)",
  httpStorm: () => "(c) HTTP duplicate storm: each event sent 10× (1 claim + 9 duplicates)",
  httpStormRedis: () => "(c-r) the same storm, Redis first line on",
  rawDup: () => "(a) raw pg, duplicate claim",
  httpDup: () => "(c) HTTP, duplicate claim",
  prisma: () => "Prisma $queryRawUnsafe((a)'s statement)",
  verify: () => "verifyApiKey, in-process",
  http401: () => "HTTP, malformed key → 401 (no DB)",
  http422: () => "HTTP, valid key, body {} → 422",
};

const TABLE: Record<Kind, Table> = {
  raw: "main",
  control: "main",
  rawNamed: "driver",
  rawFresh: "driver",
  bare: "main",
  minimal: "main",
  lib: "main",
  http: "main",
  httpNodeClient: "split",
  httpRedis: "main",
  httpStorm: "main",
  httpStormRedis: "main",
  rawDup: "main",
  httpDup: "main",
  prisma: "driver",
  verify: "split",
  http401: "split",
  http422: "split",
};

const SINGLE: Kind[] = ["raw", "control", "bare", "minimal", "lib", "http", "rawDup", "httpDup", "prisma", "rawNamed", "rawFresh", "verify", "http401", "http422", "httpNodeClient"];
const BATCH: Kind[] = ["raw", "bare", "minimal", "lib", "http"];
/** The driver comparison runs on single claims and on one client's largest batches only, to keep the run short. */
const DRIVERS: Kind[] = ["control", "prisma", "rawNamed", "rawFresh"];

export function buildBlocks(ctx: BenchContext, concurrency: readonly number[], batchSizes: readonly number[]): Block[] {
  const single = ctx.httpRedis ? [...SINGLE, "httpRedis", "httpStorm", "httpStormRedis"] as Kind[] : [...SINGLE, "httpStorm"] as Kind[];
  const block = (batch: number, clients: number, kinds: Kind[]): Block => ({
    name: batch === 1 ? `single claims, ${clients} client${clients > 1 ? "s" : ""}` : `batches of ${batch}, ${clients} client${clients > 1 ? "s" : ""}`,
    clients,
    batch,
    cells: kinds.map((kind) => ({
      id: `${kind}:${batch}:${clients}`,
      kind,
      label: LABELS[kind](batch),
      clients,
      batch,
      table: TABLE[kind],
      ...(kind === "rawFresh" ? freshConnections(batch, ctx) : { op: op(kind, batch, clients, ctx) }),
    })),
  });
  return [
    ...concurrency.map((c) => block(1, c, single)),
    ...batchSizes.flatMap((b) =>
      concurrency.map((c) => block(b, c, b === Math.max(...batchSizes) && c === 1 ? [...BATCH, ...DRIVERS] : BATCH)),
    ),
  ];
}
