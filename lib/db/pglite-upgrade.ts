/**
 * Carrying a data directory of the previous embedded default (PGlite, PostgreSQL in WebAssembly, in
 * `<KEYWARD_DATA_DIR>/pgdata/`) over to the embedded PostgreSQL server, once, on the first open after the
 * upgrade (lib/db/embedded.ts calls this under its lock, so a CLI command run meanwhile waits).
 *
 * PGlite's files are dumped with pg_dump (compiled to WebAssembly, @electric-sql/pglite-tools) as plain SQL
 * with INSERT statements, and restored through `pg` in ONE transaction: it either all arrives or nothing
 * does. Then every table's row count is compared between the two; only when they all match is
 * `pgdata/` renamed to `pgdata.pglite-carried-over/` (kept, never deleted: the user deletes it). A failure
 * leaves PGlite's files as they were and stops with what to do. PGlite and pglite-tools stay dependencies
 * for this alone, loaded only when such a directory is found.
 */
import "server-only";
import { rename, rm } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import type { EmbeddedPaths } from "./embedded";

export const CARRIED_OVER = "pgdata.pglite-carried-over";

type Counts = Record<string, number>;

const TABLES_SQL = `SELECT format('%I.%I', n.nspname, c.relname) AS name
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
 ORDER BY 1`;

async function countRows(run: (sql: string) => Promise<{ rows: Record<string, unknown>[] }>): Promise<Counts> {
  const tables = (await run(TABLES_SQL)).rows.map((r) => String(r.name));
  const counts: Counts = {};
  for (const t of tables) counts[t] = Number((await run(`SELECT count(*) AS n FROM ONLY ${t}`)).rows[0].n);
  return counts;
}

export async function carryOverPglite(paths: EmbeddedPaths, url: string, log: (msg: string) => void): Promise<void> {
  const target = new pg.Client({ connectionString: url });
  await target.connect();
  try {
    const { rows } = await target.query<{ present: boolean }>("SELECT to_regclass('public._prisma_migrations') IS NOT NULL AS present");
    if (rows[0].present) {
      throw new Error(
        `${paths.legacy} holds a database of the previous embedded default (PGlite), and ${paths.cluster} already holds one too: ` +
          `Keyward will not merge them. Keep the one you want: to use the PGlite data, stop Keyward and remove ${paths.cluster} and ${paths.password}; ` +
          `to use the new one, move ${paths.legacy} out of ${paths.dir}`,
      );
    }
    log(`found a database of the previous embedded default (PGlite) in ${paths.legacy}: carrying it over to PostgreSQL (once; this takes a few seconds) …`);
    const started = Date.now();
    const { PGlite } = await import("@electric-sql/pglite");
    const { pgDump } = await import("@electric-sql/pglite-tools/pg_dump");
    let source: InstanceType<typeof PGlite>;
    try {
      source = await PGlite.create({ dataDir: paths.legacy });
    } catch (err) {
      throw new Error(`cannot open the PGlite database in ${paths.legacy} to carry it over (${(err as Error).message}); its files are untouched`, { cause: err });
    }
    let dump: string;
    let before: Counts;
    try {
      before = await countRows((sql) => source.query(sql) as Promise<{ rows: Record<string, unknown>[] }>);
      const file = await pgDump({ pg: source, args: ["--no-owner", "--no-privileges", "--inserts", "--rows-per-insert=500"] });
      dump = await file.text();
    } finally {
      await source.close().catch(() => {});
    }
    // psql meta-commands (\restrict, newer pg_dump) mean nothing to a plain connection.
    dump = dump.replace(/^\\.*$/gm, "");
    try {
      // The restore is one transaction on the target's own connection, before the app's pool exists: one of
      // the two documented BEGINs outside withTransaction (docs/architecture.md, "Data access").
      await target.query("BEGIN");
      await target.query(dump);
      const after = await countRows((sql) => target.query(sql));
      const differing = Object.keys(before).filter((t) => before[t] !== after[t]);
      if (differing.length) throw new Error(`row counts differ after the restore in ${differing.join(", ")}`);
      await target.query("COMMIT");
    } catch (err) {
      await target.query("ROLLBACK").catch(() => {});
      throw new Error(`carrying the PGlite database in ${paths.legacy} over failed, nothing was changed (${(err as Error).message}); fix the cause and start Keyward again`, { cause: err });
    }
    await rename(paths.legacy, path.join(paths.dir, CARRIED_OVER));
    await rm(path.join(paths.dir, "owner.json"), { force: true }); // the PGlite server's ownership record
    const rowsMoved = Object.values(before).reduce((a, b) => a + b, 0);
    log(
      `carried over ${Object.keys(before).length} tables (${rowsMoved} rows) in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
        `PGlite's files are kept in ${path.join(paths.dir, CARRIED_OVER)}: delete that directory once you no longer need it`,
    );
  } finally {
    await target.end().catch(() => {});
  }
}
