/**
 * The one database client: a pg pool shared by Prisma (through @prisma/adapter-pg) and by the typed
 * raw-SQL helper in sql.ts. Kept on globalThis so Next's dev reloads and tests reuse one pool.
 */
import pg from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/client";
import { loadEnv } from "../config/env";

type Db = { pool: pg.Pool; prisma: PrismaClient; url: string };

const globalDb = globalThis as unknown as { __keywardDb?: Db };

// timestamptz and bigint arrive as strings from pg by default; keep timestamps as Date (the default)
// and parse int8 (count(*) results) into numbers: every count Keyward reads fits in 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export function createPool(url: string): pg.Pool {
  const env = loadEnv();
  const pool = new pg.Pool({
    connectionString: url,
    max: env.KEYWARD_DB_POOL_MAX,
    connectionTimeoutMillis: env.KEYWARD_DB_CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: env.KEYWARD_DB_IDLE_TIMEOUT_MS,
    // Server-side only: a client-side timer could fire while the server commits, answering 503 for a
    // claim that in fact succeeded.
    statement_timeout: env.KEYWARD_DB_STATEMENT_TIMEOUT_MS,
    application_name: "keyward",
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

export function db(): Db {
  if (!globalDb.__keywardDb) {
    const url = databaseUrl();
    const pool = createPool(url);
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    globalDb.__keywardDb = { pool, prisma, url };
  }
  return globalDb.__keywardDb;
}

export const prisma = (): PrismaClient => db().prisma;
export const pool = (): pg.Pool => db().pool;

/** Closes the shared pool (CLI commands and tests call this when done). */
export async function closeDb(): Promise<void> {
  const current = globalDb.__keywardDb;
  globalDb.__keywardDb = undefined;
  if (current) {
    await current.prisma.$disconnect();
    await current.pool.end();
  }
}
