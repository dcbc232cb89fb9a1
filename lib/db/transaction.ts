/**
 * The one data path: a `Db` handle that every domain function accepts (last parameter, defaulting to
 * `database()`), so the same statement runs alone or inside a transaction, and `withTransaction` that
 * opens one.
 *
 * A handle carries both ways of talking to the database, on the same connection:
 * - `db.prisma`: Prisma, the data layer of record (schema, migrations, ordinary reads and writes);
 * - `query(Row, sql, values, db)` / `execute(sql, values, db)` (lib/db/sql.ts, through `db.raw`): hand-written
 *   SQL, for what needs PostgreSQL itself (`FOR UPDATE`, CTEs, `unnest` batches, advisory locks, the
 *   database clock). Alone, a statement runs on the shared pool
 *   (lib/db/sql.ts: prepared where named, retried once more on a lost serialization race, a fault → 503);
 *   inside a transaction, on the transaction's connection. Rows come back alike both ways (int8 as a
 *   number, bytea as a Buffer), so one function serves both.
 *
 *     await withTransaction(async (tx) => {
 *       await updateSource(name, change, actor, tx);   // joins this transaction
 *       await recordAction(actor, entry, tx);          // commits or rolls back with it
 *     }, { retrySerialization: true });
 *
 * A function that needs a transaction of its own calls `withTransaction(fn, { db })`: given a handle that
 * is already in a transaction it joins it (the outer caller commits, and decides about retries), else it
 * opens one.
 */
import { loadEnv } from "@/lib/config/env";
import type { Prisma, PrismaClient } from "./generated/client";
import { pool, prisma } from "./client";
import { isUnavailable, run, toUnavailable, type Connection, type PreparedSql } from "./sql";

export interface Db {
  /** Prisma: the shared client, or the transaction's. */
  readonly prisma: PrismaClient | Prisma.TransactionClient;
  /** True inside withTransaction. */
  readonly inTransaction: boolean;
  /**
   * How this handle runs hand-written SQL on its connection. Not called by domain code: `query()` and
   * `execute()` (lib/db/sql.ts) are the one raw-SQL entry point, and take the handle.
   */
  readonly raw: {
    rows<Row extends object>(sql: string | PreparedSql, values: unknown[]): Promise<Row[]>;
    count(sql: string | PreparedSql, values: unknown[]): Promise<number>;
  };
}

/** The handle outside any transaction: the shared Prisma client and pg pool (lib/db/client.ts). */
const ROOT: Db = {
  inTransaction: false,
  get prisma() {
    return prisma();
  },
  raw: {
    rows: async <Row extends object>(sql: string | PreparedSql, values: unknown[]) => (await run<Row>(sql, values, pool())).rows,
    count: async (sql, values) => (await run(sql, values, pool())).rowCount ?? 0,
  },
};

/** The shared pool's handle: every domain function's default. */
export function database(): Db {
  return ROOT;
}

/**
 * A handle on a pg pool (or client) the caller holds itself: a test's wide pool, a benchmark's. Raw SQL
 * only (its `prisma` is refused: Prisma runs on the shared pool, and would not be on this connection).
 */
export function connectionDb(connection: Connection): Db {
  return {
    inTransaction: false,
    get prisma(): PrismaClient {
      throw new Error("connectionDb(): a handle on a caller's own connection runs raw SQL only");
    },
    raw: {
      rows: async <Row extends object>(sql: string | PreparedSql, values: unknown[]) => (await run<Row>(sql, values, connection)).rows,
      count: async (sql, values) => (await run(sql, values, connection)).rowCount ?? 0,
    },
  };
}

export type TransactionOptions = {
  /**
   * Run the whole function again when the transaction loses a serialization race or a deadlock
   * (40001 / 40P01, Prisma's P2034): at most this many attempts in all (`true`: 3). Only for functions
   * whose side effects all happen through the handle (they roll back with the failed attempt).
   */
  retrySerialization?: boolean | number;
  /** A handle to join if it is already in a transaction (see the header). */
  db?: Db;
  /**
   * Prisma's interactive-transaction bounds: waiting for a connection (default: KEYWARD_DB_CONNECT_TIMEOUT_MS,
   * the bound on every other wait for one; Prisma's own 2 s default was shorter than opening a connection
   * takes on a loaded machine), and the transaction's whole life.
   */
  maxWait?: number;
  timeout?: number;
  isolationLevel?: Prisma.TransactionIsolationLevel;
};

export const DEFAULT_SERIALIZATION_ATTEMPTS = 3;

/** Runs `fn` in one transaction: everything it does through the handle commits together or not at all. */
export async function withTransaction<T>(fn: (tx: Db) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  const { retrySerialization, db = database(), maxWait = loadEnv().KEYWARD_DB_CONNECT_TIMEOUT_MS, timeout, isolationLevel } = options;
  if (db.inTransaction) return fn(db);
  const attempts = retrySerialization === true ? DEFAULT_SERIALIZATION_ATTEMPTS : retrySerialization || 1;
  const client = db.prisma as PrismaClient;
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.$transaction((tx) => fn(transactionHandle(tx)), { maxWait, timeout, isolationLevel });
    } catch (err) {
      if (attempt >= attempts || !isSerializationFailure(err)) throw err;
      // A short random pause, so two transactions that collided do not collide again at once.
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * attempt));
    }
  }
}

const SERIALIZATION_CODES = new Set(["40001", "40P01", "P2034"]);
const SERIALIZATION_MESSAGE = /could not serialize access|deadlock detected|tuple to be locked was already moved/i;

type MaybeError = {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  meta?: { code?: unknown; driverAdapterError?: { cause?: unknown } };
};

/**
 * True for "this transaction lost a race; running it again may succeed": a serialization failure or a
 * deadlock, however it arrives (pg's code, Prisma's P2034 or P2010 with the code in `meta`, the driver
 * adapter's error as the cause).
 */
export function isSerializationFailure(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 4) return false;
  const e = err as MaybeError;
  for (const code of [e.code, e.originalCode, e.meta?.code]) if (typeof code === "string" && SERIALIZATION_CODES.has(code)) return true;
  if (e.kind === "TransactionWriteConflict") return true;
  if (typeof e.message === "string" && SERIALIZATION_MESSAGE.test(e.message)) return true;
  return isSerializationFailure(e.meta?.driverAdapterError?.cause, depth + 1) || isSerializationFailure(e.cause, depth + 1);
}

function transactionHandle(tx: Prisma.TransactionClient): Db {
  const text = (sql: string | PreparedSql) => (typeof sql === "string" ? sql : sql.text);
  return {
    inTransaction: true,
    prisma: tx,
    raw: {
      async rows<Row extends object>(sql: string | PreparedSql, values: unknown[]) {
        try {
          return (await tx.$queryRawUnsafe<Row[]>(text(sql), ...values)).map(normalizeRow);
        } catch (err) {
          throw isUnavailable(err) ? toUnavailable(err) : err;
        }
      },
      async count(sql: string | PreparedSql, values: unknown[]) {
        try {
          return await tx.$executeRawUnsafe(text(sql), ...values);
        } catch (err) {
          throw isUnavailable(err) ? toUnavailable(err) : err;
        }
      },
    },
  };
}

/**
 * Prisma's raw rows as the pool returns them (lib/db/client.ts): int8 as a number (every count fits in
 * 2^53), bytea as a Buffer. The two drivers still differ on numeric (Prisma: a number, pg: text) and on
 * arrays of int8 (pg: text): a statement that returns either casts it (`::int`, `::text`).
 */
function normalizeRow<Row extends object>(row: Row): Row {
  for (const [k, v] of Object.entries(row)) (row as Record<string, unknown>)[k] = normalizeValue(v);
  return row;
}

function normalizeValue(v: unknown): unknown {
  if (typeof v === "bigint") return Number(v);
  if (Array.isArray(v)) return v.map(normalizeValue);
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  return v;
}
