/**
 * The typed raw-SQL helper for statements that need PostgreSQL features Prisma's query builder does
 * not express (ON CONFLICT, CTEs, unnest batches). Runs on the shared pool, retries a statement that
 * lost a deadlock or serialization race (each statement here is atomic, so a retry is safe), and turns
 * "the database is unreachable or too slow" into a 503 KeywardError.
 */
import type pg from "pg";
import { loadEnv } from "../config/env";
import { KeywardError } from "../errors";
import { pool } from "./client";

export type Queryable = Pick<pg.Pool, "query"> | Pick<pg.PoolClient, "query">;

const RETRYABLE = new Set(["40001", "40P01"]);
const MAX_ATTEMPTS = 3;

/** True for faults that mean "the database is not available right now" rather than "your query is wrong". */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  const code = e?.code ?? "";
  if (code.startsWith("08") || code.startsWith("53") || code.startsWith("57P")) return true; // connection, resources, shutdown
  if (code === "57014") return true; // statement_timeout / query canceled
  if (["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH"].includes(code)) return true;
  const msg = e?.message ?? "";
  return /timeout exceeded when trying to connect|Connection terminated|Query read timeout|connect ECONNREFUSED|Client has encountered a connection error/i.test(
    msg,
  );
}

export function toUnavailable(err: unknown): KeywardError {
  const reason = (err as { code?: string })?.code ?? "connection failed";
  return KeywardError.unavailable(`database unavailable (${reason}); retry later`);
}

/**
 * A statement run often enough to keep prepared: parsed and planned once per connection instead of on
 * every call (the claim statement spends as long in planning as in execution). Named statements need a
 * session-mode pooler, or PgBouncer ≥ 1.21 with max_prepared_statements, in front of PostgreSQL; with
 * KEYWARD_DB_PREPARED_STATEMENTS=off (always so on the embedded database) the same text is sent as an
 * unnamed statement instead, and nothing outlives the statement on the server.
 */
export type PreparedSql = { name: string; text: string };

const settings = globalThis as unknown as { __keywardNamedStatements?: boolean };

/**
 * Whether PreparedSql goes out as a named statement. Read once per process (on globalThis: Next's route
 * bundles are separate module instances) after openDatabase has settled it; forgetNamedStatementsSetting
 * makes the next statement read it again.
 */
export function namedStatements(): boolean {
  return (settings.__keywardNamedStatements ??= loadEnv().KEYWARD_DB_PREPARED_STATEMENTS === "on");
}

export function forgetNamedStatementsSetting(): void {
  settings.__keywardNamedStatements = undefined;
}

export async function query<Row extends object>(
  sql: string | PreparedSql,
  values: unknown[] = [],
  on: Queryable = pool(),
): Promise<Row[]> {
  return (await run<Row>(sql, values, on)).rows;
}

/** For a statement whose answer is how many rows it touched (a DELETE batch): that count, no rows sent back. */
export async function execute(sql: string | PreparedSql, values: unknown[] = [], on: Queryable = pool()): Promise<number> {
  return (await run<object>(sql, values, on)).rowCount ?? 0;
}

async function run<Row extends object>(sql: string | PreparedSql, values: unknown[], on: Queryable): Promise<pg.QueryResult<Row>> {
  // The one place a statement name reaches the driver: off, every statement is unnamed, so no
  // connection carries prepared statements a pooler or the embedded database's shared session could mix up.
  const config = typeof sql !== "string" && namedStatements() ? { ...sql, values } : { text: typeof sql === "string" ? sql : sql.text, values };
  for (let attempt = 1; ; attempt++) {
    try {
      return await on.query<Row>(config);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code && RETRYABLE.has(code) && attempt < MAX_ATTEMPTS && "totalCount" in on) continue;
      if (isUnavailable(err)) throw toUnavailable(err);
      throw err;
    }
  }
}
