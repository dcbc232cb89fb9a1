/**
 * The scenarios. Each is one kind of request (an `Op`) at one concurrency and batch size; scenarios of
 * the same shape form a block that always contains (a), the raw-pg baseline, so every ratio compares
 * figures measured within about a second of each other.
 *
 *   raw     (a)  pg.Pool running CLAIM_SQL, the exact statement and parameters the library sends
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
import { CLAIM_SQL, claimEvent, claimEvents, claimStatementParams } from "../lib/claims/claim";
import { verifyApiKey } from "../lib/auth/api-keys";
import { prisma } from "../lib/db/client";
import type { ClaimResult } from "../lib/claims/schema";
import type { Op } from "./drive";
import type { JsonClient } from "./http-client";

export type Kind =
  | "raw"
  | "control"
  | "rawNamed"
  | "rawFresh"
  | "bare"
  | "lib"
  | "http"
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
  http: (clients: number) => JsonClient;
  httpBadKey: (clients: number) => JsonClient;
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

/** CLAIM_SQL's parameters for these ids, as lib/claims/claim.ts builds them (no hashes, no repeats, no lease). */
export function claimParams(source: string, ids: readonly string[]): unknown[] {
  const distinct = ids.map((eventId) => ({ first: { eventId, eventType: EVENT_TYPE }, repeats: 0 }));
  return claimStatementParams(source, distinct, null, ACTOR);
}

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
      const r = await pool.query({ ...CLAIM_SQL, values: claimParams(ctx.source, ids) });
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
        const r = await ctx.rawPool.query({ ...CLAIM_SQL, values: claimParams(source, ids) });
        expect(r.rows.length === batch && r.rows.every((row) => row.claimed_now), "raw claim", r.rows[0]);
      };
    case "control":
      return async () => {
        const ids = newIds(batch);
        const r = await ctx.controlPool.query({ ...CLAIM_SQL, values: claimParams(source, ids) });
        expect(r.rows.length === batch && r.rows.every((row) => row.claimed_now), "raw claim (control)", r.rows[0]);
      };
    case "rawNamed":
      return async () => {
        const ids = newIds(batch);
        const r = await ctx.rawPool.query(CLAIM_SQL.text, claimParams(source, ids));
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
    case "rawDup":
      return async () => {
        const r = await ctx.rawPool.query({ ...CLAIM_SQL, values: claimParams(source, [pick(ctx.claimedIds)]) });
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
        const rows = await prisma().$queryRawUnsafe<{ claimed_now: boolean }[]>(CLAIM_SQL.text, ...claimParams(source, ids));
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

const LABELS: Record<Kind, (batch: number) => string> = {
  raw: () => "(a) raw pg, CLAIM_SQL (prepared)",
  control: () => "(a) again on a second pool (control)",
  rawNamed: () => "raw pg, CLAIM_SQL unprepared (parsed and planned every call)",
  rawFresh: () => "raw pg, CLAIM_SQL on fresh connections",
  bare: () => "(a′) bare INSERT … ON CONFLICT DO NOTHING",
  lib: (b) => (b === 1 ? "(b) library claimEvent" : "(b) library claimEvents"),
  http: (b) => (b === 1 ? "(c) HTTP POST /api/v1/claims" : "(c) HTTP POST /api/v1/claims/batch"),
  rawDup: () => "(a) raw pg, duplicate claim",
  httpDup: () => "(c) HTTP, duplicate claim",
  prisma: () => "Prisma $queryRawUnsafe(CLAIM_SQL)",
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
  lib: "main",
  http: "main",
  rawDup: "main",
  httpDup: "main",
  prisma: "driver",
  verify: "split",
  http401: "split",
  http422: "split",
};

const SINGLE: Kind[] = ["raw", "control", "bare", "lib", "http", "rawDup", "httpDup", "prisma", "rawNamed", "rawFresh", "verify", "http401", "http422"];
const BATCH: Kind[] = ["raw", "bare", "lib", "http"];
/** The driver comparison runs on single claims and on one client's largest batches only, to keep the run short. */
const DRIVERS: Kind[] = ["control", "prisma", "rawNamed", "rawFresh"];

export function buildBlocks(ctx: BenchContext, concurrency: readonly number[], batchSizes: readonly number[]): Block[] {
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
    ...concurrency.map((c) => block(1, c, SINGLE)),
    ...batchSizes.flatMap((b) =>
      concurrency.map((c) => block(b, c, b === Math.max(...batchSizes) && c === 1 ? [...BATCH, ...DRIVERS] : BATCH)),
    ),
  ];
}
