/**
 * Global set-up of the tiers that talk to PostgreSQL (db, system, e2e): the migrated template database every
 * test file copies (setup-file.ts: `CREATE DATABASE … TEMPLATE`, ~0.2 s instead of ~2.5 s of migrations).
 *
 * The template is named after a hash of prisma/migrations, so it is made once per set of migrations and
 * kept between runs; it is built under a temporary name and renamed when complete (a run killed half-way
 * leaves no half-migrated template), and it refuses connections (a connection to a template would make
 * every copy fail). Tiers start their set-up concurrently: an advisory lock lets one build it.
 * Databases of earlier runs that were killed before their files could drop them are dropped here.
 */
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { migrate, MIGRATIONS_DIR } from "@/lib/db/migrate";

export const SERVER_URL = process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
/** Prefix of every per-file database (setup-file.ts), followed by the run's start in epoch seconds. */
export const FILE_DB_PREFIX = "keyward_f_";
/** A per-file database older than this belongs to a run that died: its files can no longer drop it. */
const ABANDONED_AFTER_S = 6 * 3600;
const TEMPLATE_LOCK = 72707371;

function migrationsHash(): string {
  const h = createHash("sha256");
  for (const dir of readdirSync(MIGRATIONS_DIR, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()) {
    h.update(dir).update(readFileSync(path.join(MIGRATIONS_DIR, dir, "migration.sql")));
  }
  return h.digest("hex").slice(0, 16);
}

function dbUrl(name: string): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Makes the template if this set of migrations has none yet; returns its name. */
export async function ensureTemplate(): Promise<string> {
  const name = `keyward_tpl_${migrationsHash()}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  try {
    await admin.query("SELECT pg_advisory_lock($1)", [TEMPLATE_LOCK]);
    const exists = async (n: string) => (await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [n])).rowCount === 1;
    if (!(await exists(name))) {
      const building = `${name}_build_${randomBytes(3).toString("hex")}`;
      await admin.query(`CREATE DATABASE "${building}"`);
      try {
        await migrate(dbUrl(building));
      } catch (err) {
        await admin.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
        throw err;
      }
      await admin.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
      await admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS false`);
    }
    // Leftovers: templates of other migration sets, half-built templates, and per-file databases of runs
    // long gone (the name carries the run's start).
    const { rows } = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'keyward\\_tpl\\_%' OR datname LIKE $1",
      [`${FILE_DB_PREFIX.replace(/_/g, "\\_")}%`],
    );
    const now = Math.floor(Date.now() / 1000);
    for (const { datname } of rows) {
      const started = datname.startsWith(FILE_DB_PREFIX) ? Number(datname.slice(FILE_DB_PREFIX.length).split("_")[0]) : NaN;
      const stale = datname.startsWith(FILE_DB_PREFIX) ? now - started > ABANDONED_AFTER_S : datname !== name;
      if (stale) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => {});
    }
    return name;
  } finally {
    await admin.query("SELECT pg_advisory_unlock($1)", [TEMPLATE_LOCK]).catch(() => {});
    await admin.end();
  }
}

export default async function setup(project: TestProject) {
  project.provide("templateDatabase", await ensureTemplate());
  project.provide("serverUrl", SERVER_URL);
  project.provide("runId", `${Math.floor(Date.now() / 1000)}`);
}

declare module "vitest" {
  export interface ProvidedContext {
    templateDatabase: string;
    serverUrl: string;
    runId: string;
  }
}
