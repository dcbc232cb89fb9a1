/**
 * A database of the test file's own, for tests of whole-table jobs such as pruning: a run deletes every
 * expired key in the database, including the expired-but-not-yet-pruned keys other test files create on
 * purpose in the shared database. Call at the top of the file: the file's library calls (the shared
 * pool) and the spawned CLIs and servers it starts use the private database; it is dropped afterwards.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { migrate } from "@/lib/db/migrate";
import { closeDb } from "@/lib/db/client";
import { flushClaimCounts } from "@/lib/metrics/claim-counts";

export function usePrivateDatabase(): { url: () => string } {
  const shared = process.env.DATABASE_URL;
  const name = `keyward_test_own_${Date.now()}_${randomBytes(3).toString("hex")}`;
  const server = inject("serverUrl");
  const url = new URL(server);
  url.pathname = `/${name}`;

  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: server });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };

  beforeAll(async () => {
    await closeDb(); // the next pool() opens the private database
    await admin(`CREATE DATABASE "${name}"`);
    await migrate(url.toString());
    process.env.DATABASE_URL = url.toString();
  });

  afterAll(async () => {
    await flushClaimCounts().catch(() => {});
    await closeDb();
    process.env.DATABASE_URL = shared;
    if (!process.env.KEYWARD_KEEP_TEST_DB) await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });

  return { url: () => url.toString() };
}
