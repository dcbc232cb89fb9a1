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
 */
import { readdir } from "node:fs/promises";
import { loadEnv } from "../config/env";
import { pool } from "./client";
import { MIGRATIONS_DIR } from "./migrate";

export class SessionCheckError extends Error {}

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
