/**
 * The one raw-SQL entry point: `query(Row, sql, values, db)` (rows, each declared by the zod schema `Row`) and `execute(sql, values, db)` (how many rows
 * it touched), for statements that need PostgreSQL itself (ON CONFLICT, CTEs, unnest batches, FOR UPDATE,
 * advisory locks; docs/architecture.md, "Data access"). `db` is the handle every domain function takes last
 * (lib/db/transaction.ts: the shared pool's, a transaction's, or `connectionDb()` on a pool of the caller's
 * own). On a pool a statement that lost a deadlock or serialization race is retried (each statement is
 * atomic, so a retry is safe), and "the database is unreachable or too slow" becomes a 503 KeywardError.
 * `sqlParams()` is the one placeholder builder.
 */
import "server-only";
import type pg from "pg";
import type { z } from "zod";
import { loadEnv } from "@/lib/config/env";
import { KeywardError } from "@/lib/errors";
import { database, DEFAULT_SERIALIZATION_ATTEMPTS, isSerializationFailure, type Db } from "./transaction";
import { processGlobal } from "@/lib/process-global";
import { checkShapes } from "@/lib/shape-checks";

/** A pg pool or client a caller holds itself (a dedicated pool; the read replica's): wrapped by connectionDb(). */
export type Connection = Pick<pg.Pool, "query"> | Pick<pg.PoolClient, "query">;

/** Prisma's codes for "cannot reach / talk to the database" (P1xxx) and "no pooled connection in time" (P2024). */
const PRISMA_UNAVAILABLE = new Set(["P1001", "P1002", "P1008", "P1011", "P1017", "P2024", "P2037"]);
/** @prisma/adapter-pg's DriverAdapterError kinds with the same meaning. */
const ADAPTER_UNAVAILABLE = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections", "TlsConnectionError"]);
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
const UNAVAILABLE_MESSAGE =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|connect ECONNREFUSED|Client has encountered a connection error|not queryable|timeout expired|Can't reach database server|Server has closed the connection|Timed out fetching a new connection|Unable to start a transaction in the given time|on an expired transaction/i;

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
 * KEYWARD_DB_PREPARED_STATEMENTS=off the same text is sent as an
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

/**
 * The one placeholder builder for a statement assembled from optional parts (a list's filters):
 * `p(value)` appends the value and answers its placeholder (`$1`, `$2`, …); `values` goes with the text.
 *
 *     const { values, p } = sqlParams(source);            // $1 is the source
 *     if (q.from) where.push(`failed_at >= ${p(q.from)}`); // $2
 */
export function sqlParams(...first: unknown[]): { values: unknown[]; p: (value: unknown) => string } {
  const values = [...first];
  return { values, p: (value) => `$${values.push(value)}` };
}

/**
 * A statement's rows, declared once: a zod object schema next to the statement, written to what pg sends
 * back (int8 as a number, lib/db/client.ts; numeric as a string; timestamptz as a Date; bytea as a Buffer;
 * json/jsonb parsed; arrays as arrays). query() answers rows of its type.
 */
export type RowSchema = z.ZodType<object>;

/**
 * Runs a statement through handle `db` (default: the shared pool's) and resolves with its rows, each of
 * the type `row` declares. With shape checks on (lib/shape-checks.ts: outside production, or
 * KEYWARD_CHECK_RESPONSES=1) every row is held to `row` and a mismatch throws, naming the statement and
 * the field; in production only the type holds.
 */
export async function query<S extends RowSchema>(row: S, sql: string | PreparedSql, values: unknown[] = [], db: Db = database()): Promise<z.output<S>[]> {
  return checkedRows(row, sql, await db.raw.rows<z.output<S>>(sql, values));
}

/** `rows` if each is what `row` declares (when shape checks are on); else an error naming the statement and field. */
export function checkedRows<S extends RowSchema>(row: S, sql: string | PreparedSql, rows: z.output<S>[]): z.output<S>[] {
  if (!checkShapes()) return rows;
  for (const [i, r] of rows.entries()) {
    const parsed = row.safeParse(r);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue.path.length ? issue.path.map(String).join(".") : "(row)";
      throw new Error(`row ${i} of statement ${statementName(sql)} does not match its declaration: field ${field}: ${issue.message}`);
    }
  }
  return rows;
}

/** A statement as an error names it: its PreparedSql name, else the start of its text. */
export function statementName(sql: string | PreparedSql): string {
  if (typeof sql !== "string") return `"${sql.name}"`;
  const text = sql.replace(/\s+/g, " ").trim();
  return `"${text.length > 80 ? `${text.slice(0, 80)}…` : text}"`;
}

/** For a statement whose answer is how many rows it touched (a DELETE batch): that count, no rows sent back. */
export async function execute(sql: string | PreparedSql, values: unknown[] = [], db: Db = database()): Promise<number> {
  return db.raw.count(sql, values);
}

/**
 * A statement on a connection the caller holds, its unavailability thrown as it came (not turned into a 503
 * and logged as one): for a caller with somewhere else to go, the read replica's fallback (lib/db/read.ts).
 */
export async function queryOrThrow<S extends RowSchema>(row: S, sql: string | PreparedSql, values: unknown[], on: Connection): Promise<z.output<S>[]> {
  return checkedRows(row, sql, (await run<z.output<S>>(sql, values, on, false)).rows);
}

/** A statement on a pg connection: what a pool's or a connection's handle does (lib/db/transaction.ts). */
export async function run<Row extends object>(
  sql: string | PreparedSql,
  values: unknown[],
  on: Connection,
  mapUnavailable = true,
): Promise<pg.QueryResult<Row>> {
  // The one place a statement name reaches the driver: off, every statement is unnamed, so no
  // connection carries prepared statements a pooler could mix up.
  const config = typeof sql !== "string" && namedStatements() ? { ...sql, values } : { text: typeof sql === "string" ? sql : sql.text, values };
  for (let attempt = 1; ; attempt++) {
    try {
      return await on.query<Row>(config);
    } catch (err) {
      if (isSerializationFailure(err) && attempt < DEFAULT_SERIALIZATION_ATTEMPTS && "totalCount" in on) continue;
      if (mapUnavailable && isUnavailable(err)) throw toUnavailable(err);
      throw err;
    }
  }
}
