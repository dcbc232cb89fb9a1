/**
 * The one database client: a pg pool shared by Prisma (through @prisma/adapter-pg) and by the typed
 * raw-SQL helper in sql.ts. Process-wide (lib/process-global.ts), so Next's dev reloads and tests reuse one pool.
 */
import "server-only";
import pg from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/client";
import { loadEnv } from "@/lib/config/env";
import { processGlobal } from "@/lib/process-global";

type Shared = { pool: pg.Pool; prisma: PrismaClient; url: string };

const slot = processGlobal("db", () => ({ current: undefined as Shared | undefined }));

// timestamptz and bigint arrive as strings from pg by default; keep timestamps as Date (the default)
// and parse int8 (count(*) results) into numbers: every count Keyward reads fits in 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

/**
 * How much longer than the server's statement_timeout the client waits for an answer before it gives up
 * on the connection. On a reachable database the server cancels first (57014, the connection stays
 * usable); the client-side timer only fires when no answer can come at all (a black-holed network, a
 * frozen server), and then the connection is destroyed (TimeoutClient below).
 */
export const QUERY_TIMEOUT_MARGIN_MS = 500;
/** TCP keepalive probes start after this long without traffic, so a silently dead idle socket is found. */
const KEEPALIVE_IDLE_MS = 10_000;

/**
 * A pg client that destroys its connection when a query gets no answer within query_timeout. pg itself
 * only fails the query and keeps the socket (the late answer, or none, would then meet the next query of
 * whoever borrows the client); ending it here marks it not queryable, and pg-pool discards such a client
 * on release instead of handing it out again. Covers every caller of the pool alike: pool.query (which
 * also releases with the error), clients from pool.connect(), and Prisma's adapter-pg transactions (which
 * release without an error).
 */
class TimeoutClient extends pg.Client {
  // pg's query() is overloaded (config or text, values, callback or promise): wrap whichever it is.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an override of every overload answers what each one does
  query(...args: unknown[]): any {
    const drop = (err: unknown) => {
      if (err instanceof Error && err.message === "Query read timeout") this.end().catch(() => {});
    };
    const last = args.length - 1;
    if (typeof args[last] === "function") {
      const callback = args[last] as (err: unknown, res: unknown) => void;
      args[last] = (err: unknown, res: unknown) => {
        drop(err);
        callback(err, res);
      };
      return Reflect.apply(super.query, this, args);
    }
    const result = Reflect.apply(super.query, this, args);
    if (result && typeof result.then === "function") result.then(undefined, drop);
    return result;
  }
}

/**
 * Every wait on the database is bounded: a connection attempt (and a wait for a free pooled connection)
 * by KEYWARD_DB_CONNECT_TIMEOUT_MS, a statement by KEYWARD_DB_STATEMENT_TIMEOUT_MS on the server and
 * that + QUERY_TIMEOUT_MARGIN_MS on the client. So a request that meets a database fault answers 503
 * within connect + statement timeout + 1 s, and a connection that timed out is never reused.
 * A claim whose answer was lost this way may still have committed: callers resolve that with an
 * attemptId (docs/reliability.md).
 */
export function createPool(url: string, applicationName = "keyward"): pg.Pool {
  const env = loadEnv();
  const pool = new pg.Pool({
    Client: TimeoutClient,
    connectionString: url,
    max: env.KEYWARD_DB_POOL_MAX,
    connectionTimeoutMillis: env.KEYWARD_DB_CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: env.KEYWARD_DB_IDLE_TIMEOUT_MS,
    statement_timeout: env.KEYWARD_DB_STATEMENT_TIMEOUT_MS,
    query_timeout: env.KEYWARD_DB_STATEMENT_TIMEOUT_MS + QUERY_TIMEOUT_MARGIN_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    application_name: applicationName,
  });
  // An idle client losing its connection must not crash the process; the next query reports it.
  pool.on("error", () => {});
  return pool;
}

export function databaseUrl(): string {
  const url = loadEnv().DATABASE_URL;
  if (!url) {
    throw new Error("DATABASE_URL is not set: start Keyward with `keyward start` (embedded database) or set it");
  }
  return url;
}

export function db(): Shared {
  if (!slot.current) {
    const url = databaseUrl();
    const pool = createPool(url);
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    slot.current = { pool, prisma, url };
  }
  return slot.current;
}

const readSlot = processGlobal("readDb", () => ({ current: undefined as { pool: pg.Pool; url: string } | undefined }));

/**
 * The read replica's pool (KEYWARD_READ_DATABASE_URL), or null when none is configured. Only lib/db/read.ts
 * uses it: it decides which reads may go there and what happens when the replica cannot answer.
 */
export function readReplicaPool(): pg.Pool | null {
  const url = loadEnv().KEYWARD_READ_DATABASE_URL;
  if (!url) return null;
  if (readSlot.current?.url !== url) {
    readSlot.current?.pool.end().catch(() => {});
    readSlot.current = { pool: createPool(url, "keyward-read"), url };
  }
  return readSlot.current.pool;
}

export const prisma = (): PrismaClient => db().prisma;
export const pool = (): pg.Pool => db().pool;

/** Closes the shared pool (CLI commands and tests call this when done). */
export async function closeDb(): Promise<void> {
  const current = slot.current;
  slot.current = undefined;
  const replica = readSlot.current;
  readSlot.current = undefined;
  if (replica) await replica.pool.end();
  if (current) {
    await current.prisma.$disconnect();
    await current.pool.end();
  }
}
