/**
 * What `keyward start` checks about the database sessions it gets, before serving. Aimed at deployments
 * behind a connection pooler (docs/reliability.md, "Behind PgBouncer, several servers"):
 *
 * - The pool asks for KEYWARD_DB_STATEMENT_TIMEOUT_MS as a startup parameter. PostgreSQL applies it;
 *   PgBouncer 1.18 refuses the connection ("unsupported startup parameter: statement_timeout") unless
 *   its ini says `ignore_startup_parameters = statement_timeout`, and then drops it. Behind PgBouncer the
 *   timeout is therefore set on the role or the database (`ALTER ROLE keyward SET statement_timeout =
 *   '5s'`), which every server session PgBouncer opens inherits. A refusal stops start-up with that fix;
 *   a session whose timeout differs from the configured one is a warning (the server still runs, but a
 *   stuck statement is bounded by the database's value, or not at all when it is 0).
 * - With KEYWARD_MIGRATE_DATABASE_URL set, the migrations went through another URL: the database served
 *   must then have them all, or the two URLs name different databases.
 * - Without it, the migrations went through DATABASE_URL. Prisma's migrator takes a session-level
 *   advisory lock and leaves releasing it to the end of its session; through a transaction-mode pooler the
 *   server session outlives the migrator, and the lock stays behind on it, where the next migration (the
 *   next `keyward start` or CLI command) would wait for it forever. A lock still held afterwards by an
 *   idle session (or by the very session this check runs on: Keyward holds no session lock of its own)
 *   is reported as a warning naming KEYWARD_MIGRATE_DATABASE_URL.
 */
import "server-only";
import { readdir } from "node:fs/promises";
import { loadEnv } from "@/lib/config/env";
import { pool } from "./client";
import { MIGRATIONS_DIR } from "./migrate";

export class SessionCheckError extends Error {}

/** The key of the session-level advisory lock Prisma's migrator takes (its schema engine's constant). */
export const MIGRATOR_LOCK_KEY = 72707369;

/** The fix for a pooler that refuses a startup parameter, for messages and docs. */
export function startupParameterAdvice(parameter: string, timeoutMs: number): string {
  return (
    `the database (a connection pooler such as PgBouncer?) refuses the startup parameter ${parameter}: ` +
    `add \`ignore_startup_parameters = ${parameter}\` to its configuration and set the timeout on the role or ` +
    `database instead, e.g. ALTER ROLE <user> SET statement_timeout = '${timeoutMs}ms' (docs/reliability.md)`
  );
}

/**
 * Runs the checks on a connection of the shared pool. Resolves with warnings to print; rejects with a
 * SessionCheckError saying what to change when Keyward cannot run this way.
 */
export async function checkDatabaseSession(o: { migratedElsewhere?: boolean } = {}): Promise<string[]> {
  const wanted = loadEnv().KEYWARD_DB_STATEMENT_TIMEOUT_MS;
  let effective: number;
  try {
    // pg_settings gives the value in its base unit (ms) whatever the form it was set in ('5s', '1min').
    const { rows } = await pool().query<{ setting: string }>("SELECT setting FROM pg_settings WHERE name = 'statement_timeout'");
    effective = Number(rows[0].setting);
  } catch (err) {
    const refused = /unsupported startup parameter: (\w+)/.exec((err as Error).message ?? "");
    if (refused) throw new SessionCheckError(startupParameterAdvice(refused[1], wanted));
    throw err;
  }
  const warnings: string[] = [];
  if (effective !== wanted) {
    warnings.push(
      `statement_timeout on the database sessions is ${effective === 0 ? "0 (none)" : `${effective} ms`}, not ` +
        `KEYWARD_DB_STATEMENT_TIMEOUT_MS=${wanted}: the startup parameter did not reach PostgreSQL (a pooler dropped it?). ` +
        `Set it where the pooler's sessions inherit it: ALTER ROLE <user> SET statement_timeout = '${wanted}ms' (docs/reliability.md)`,
    );
  }
  if (!o.migratedElsewhere && (await migratorLockLeftBehind())) {
    warnings.push(
      `the migrator's session lock (pg_advisory_lock(${MIGRATOR_LOCK_KEY})) is still held by an idle database session after ` +
        "migrating: DATABASE_URL looks like a transaction-mode pooler (PgBouncer), where the next migration would wait for it " +
        "forever. Set KEYWARD_MIGRATE_DATABASE_URL to a direct URL of the same database (docs/reliability.md)",
    );
  }
  if (o.migratedElsewhere) {
    const newest = (await readdir(MIGRATIONS_DIR, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort().at(-1);
    const applied = await pool()
      .query<{ applied: boolean }>(
        "SELECT EXISTS (SELECT 1 FROM _prisma_migrations WHERE migration_name = $1 AND finished_at IS NOT NULL) AS applied",
        [newest],
      )
      .then(
        ({ rows }) => rows[0].applied,
        (err: { code?: string }) => (err.code === "42P01" ? false : Promise.reject(err)), // no _prisma_migrations at all
      );
    if (!applied) {
      throw new SessionCheckError(
        `migration ${newest} was applied through KEYWARD_MIGRATE_DATABASE_URL but DATABASE_URL's database does not have it: ` +
          "the two URLs must name the same database",
      );
    }
  }
  return warnings;
}

/**
 * True if the migrator's lock is still held, after a second look a second later (a direct connection's
 * backend may take a moment to exit; a concurrent migrator on another instance would be done by then).
 */
async function migratorLockLeftBehind(): Promise<boolean> {
  const held = async () => {
    const { rows } = await pool().query<{ held: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1 AND l.granted
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND (l.pid = pg_backend_pid() OR a.state = 'idle')) AS held`,
      [MIGRATOR_LOCK_KEY],
    );
    return rows[0].held;
  };
  if (!(await held())) return false;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return held();
}
