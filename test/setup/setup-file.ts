/**
 * Runs before each test file of the db, system and e2e tiers: the file gets a database of its own, a copy of
 * the migrated template (template-db.ts), as DATABASE_URL for its library calls and for every CLI and server
 * it spawns. No file sees another's rows, so a whole-table job (pruning, sampling) or a count of everything
 * is safe in any file; the copy is dropped after the file's own afterAll hooks (servers stopped first).
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, inject } from "vitest";
import { closeDb } from "@/lib/db/client";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";
import { FILE_DB_PREFIX } from "./template-db";
import "./db";

const server = inject("serverUrl");
const name = `${FILE_DB_PREFIX}${inject("runId")}_${randomBytes(4).toString("hex")}`;

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: server });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

await admin(`CREATE DATABASE "${name}" TEMPLATE "${inject("templateDatabase")}"`);
const url = new URL(server);
url.pathname = `/${name}`;
// DATABASE_URL is what the library and spawned processes read (a test may point it elsewhere for a while, e.g.
// through a pooler); KEYWARD_TEST_FILE_DATABASE_URL stays the file's own (fileDatabaseUrl in db.ts).
process.env.DATABASE_URL = process.env.KEYWARD_TEST_FILE_DATABASE_URL = url.toString();

afterAll(async () => {
  await flushClaimCounts().catch(() => {});
  await closeDb();
  if (!process.env.KEYWARD_KEEP_TEST_DB) await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
});
