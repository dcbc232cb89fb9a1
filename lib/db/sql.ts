/**
 * The typed raw-SQL helper for statements that need PostgreSQL features Prisma's query builder does
 * not express (ON CONFLICT, CTEs, unnest batches). Runs on the shared pool, retries a statement that
 * lost a deadlock or serialization race (each statement here is atomic, so a retry is safe), and turns
 * "the database is unreachable or too slow" into a 503 KeywardError.
 */
import "server-only";
import type pg from "pg";
import { loadEnv } from "../config/env";
import { KeywardError } from "../errors";
import { pool } from "./client";
import type { Db } from "./transaction";
import { processGlobal } from "../process-global";

/** A pg pool or client a caller holds itself (a dedicated pool, a connection in its own transaction). */
export type Connection = Pick<pg.Pool, "query"> | Pick<pg.PoolClient, "query">;
/**
 * Where a statement runs: a `Db` handle (lib/db/transaction.ts: the shared pool, or a transaction), or a
 * pg connection the caller holds.
 */
export type Queryable = Db | Connection;

const isDbHandle = (on: Queryable): on is Db => "inTransaction" in on && "prisma" in on;

const RETRYABLE = new Set(["40001", "40P01"]);
const MAX_ATTEMPTS = 3;

/** Prisma's codes for "cannot reach / talk to the database" (P1xxx) and "no pooled connection in time" (P2024). */
const PRISMA_UNAVAILABLE = new Set(["P1001", "P1002", "P1008", "P1011", "P1017", "P2024", "P2037"]);
/** @prisma/adapter-pg's DriverAdapterError kinds with the same meaning. */
const ADAPTER_UNAVAILABLE = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections", "TlsConnectionError"]);
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
const UNAVAILABLE_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|connect ECONNREFUSED|Client has encountered a connection error|not queryable|timeout expired|Can't reach database server|Server has closed the connection|Timed out fetching a new connection/i;

type MaybeDbError = {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
  kind?: unknown;
  originalCode?: unknown;
  meta?: { driverAdapterError?: { cause?: unknown } };
};

/**
 * True for faults that mean "the database is not available right now" rather than "your query is wrong",
 * however they arrive: a pg error or socket error, pg's own timeouts, Prisma's P1xxx/P2024 codes, or a
 * DriverAdapterError wrapped by Prisma (or by a library such as Better Auth, as the error's cause).
 */
export function isUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 4) return false;
  const e = err as MaybeDbError;
  const code = typeof e.code === "string" ? e.code : "";
  if (code.startsWith("08") || code.startsWith("53") || code.startsWith("57P")) return true; // connection, resources, shutdown
  if (code === "57014") return true; // statement_timeout / query canceled
  if (SOCKET_CODES.has(code) || PRISMA_UNAVAILABLE.has(code)) return true;
  if (typeof e.kind === "string" && ADAPTER_UNAVAILABLE.has(e.kind)) return true;
  if (typeof e.originalCode === "string" && isUnavailable({ code: e.originalCode }, depth + 1)) return true;
  if (typeof e.message === "string" && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  return isUnavailable(e.meta?.driverAdapterError?.cause, depth + 1) || isUnavailable(e.cause, depth + 1);
}

export function toUnavailable(err: unknown): KeywardError {
  const code = (err as { code?: unknown })?.code;
  // A short, safe reason: an error code (never a message, which may name the host or the URL).
  const reason = typeof code === "string" && /^[A-Z0-9_]{1,16}$/.test(code) ? code : "connection failed";
  logUnavailable(err);
  return KeywardError.unavailable(`database unavailable (${reason}); retry later`);
}

const LOG_EVERY_MS = 10_000;
const logState = processGlobal("unavailableLog", () => ({ last: 0, suppressed: 0 }));

/** One line in the server log per 10 s while the database fails (not one per request), with the cause. */
function logUnavailable(err: unknown): void {
  const state = logState;
  const now = Date.now();
  if (now - state.last < LOG_EVERY_MS) {
    state.suppressed++;
    return;
  }
  const more = state.suppressed ? ` (${state.suppressed} more since the last report)` : "";
  state.last = now;
  state.suppressed = 0;
  const e = err as { code?: unknown; message?: unknown } | undefined;
  // Prisma's messages start with a code excerpt; their last line is the cause.
  const message = String(e?.message ?? err).split("\n").filter((l) => l.trim()).pop() ?? "";
  console.warn(`[keyward] database unavailable, answering 503: ${String(e?.code ?? "")} ${message}`.trim() + more);
}

/**
 * A statement run often enough to keep prepared: parsed and planned once per connection instead of on
 * every call (the claim statement spends as long in planning as in execution). Named statements need a
 * session-mode pooler, or PgBouncer ≥ 1.21 with max_prepared_statements, in front of PostgreSQL; with
 * KEYWARD_DB_PREPARED_STATEMENTS=off (always so on the embedded database) the same text is sent as an
 * unnamed statement instead, and nothing outlives the statement on the server.
 */
export type PreparedSql = { name: string; text: string };

const settings = processGlobal("namedStatements", () => ({ current: undefined as boolean | undefined }));

/**
 * Whether PreparedSql goes out as a named statement. Read once per process (process-wide: Next's route
 * bundles are separate module instances) after openDatabase has settled it; forgetNamedStatementsSetting
 * makes the next statement read it again.
 */
export function namedStatements(): boolean {
  return (settings.current ??= loadEnv().KEYWARD_DB_PREPARED_STATEMENTS === "on");
}

export function forgetNamedStatementsSetting(): void {
  settings.current = undefined;
}

export async function query<Row extends object>(
  sql: string | PreparedSql,
  values: unknown[] = [],
  on: Queryable = pool(),
): Promise<Row[]> {
  if (isDbHandle(on)) return on.query<Row>(sql, values);
  return (await run<Row>(sql, values, on)).rows;
}

/** For a statement whose answer is how many rows it touched (a DELETE batch): that count, no rows sent back. */
export async function execute(sql: string | PreparedSql, values: unknown[] = [], on: Queryable = pool()): Promise<number> {
  if (isDbHandle(on)) return on.execute(sql, values);
  return (await run<object>(sql, values, on)).rowCount ?? 0;
}

async function run<Row extends object>(sql: string | PreparedSql, values: unknown[], on: Connection): Promise<pg.QueryResult<Row>> {
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
