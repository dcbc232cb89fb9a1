/**
 * Where migrations go (KEYWARD_MIGRATE_DATABASE_URL) and what start-up checks about the database
 * sessions (lib/db/session-check.ts), against the real PostgreSQL. The same checks behind a real
 * PgBouncer are in test/reliability/pgbouncer.system.test.ts.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, inject, it } from "vitest";
import { ConfigError, loadEnv } from "@/lib/config/env";
import { closeDb } from "@/lib/db/client";
import { migrationTarget, openDatabase } from "@/lib/db/open";
import { checkDatabaseSession, SessionCheckError } from "@/lib/db/session-check";

const saved = { ...process.env };
afterEach(async () => {
  await closeDb();
  for (const k of ["DATABASE_URL", "KEYWARD_MIGRATE_DATABASE_URL", "KEYWARD_DB_STATEMENT_TIMEOUT_MS"]) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: inject("serverUrl") });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

describe("KEYWARD_MIGRATE_DATABASE_URL", () => {
  it("is where migrations go when set, DATABASE_URL otherwise", async () => {
    const database = await openDatabase();
    expect(migrationTarget(database).url).toBe(process.env.DATABASE_URL);
    process.env.KEYWARD_MIGRATE_DATABASE_URL = "postgresql://owner:secret@10.0.0.5:5432/keyward";
    const target = migrationTarget(database);
    expect(target.url).toBe("postgresql://owner:secret@10.0.0.5:5432/keyward");
    expect(target.description).toBe("PostgreSQL at 10.0.0.5:5432/keyward (KEYWARD_MIGRATE_DATABASE_URL)");
  });

  it("must be a postgresql:// URL, and needs DATABASE_URL (the embedded database migrates itself)", async () => {
    expect(() => loadEnv({ ...process.env, KEYWARD_MIGRATE_DATABASE_URL: "mysql://x/y" })).toThrow(/KEYWARD_MIGRATE_DATABASE_URL: must be a postgresql:\/\/ URL/);
    expect(loadEnv({ ...process.env, KEYWARD_MIGRATE_DATABASE_URL: "" }).KEYWARD_MIGRATE_DATABASE_URL).toBeUndefined();
    delete process.env.DATABASE_URL;
    process.env.KEYWARD_MIGRATE_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/keyward";
    await expect(openDatabase()).rejects.toThrow(ConfigError);
    await expect(openDatabase()).rejects.toThrow(/KEYWARD_MIGRATE_DATABASE_URL is set but DATABASE_URL is not/);
  });
});

describe("checkDatabaseSession", () => {
  it("is silent when the sessions have the configured statement_timeout", async () => {
    expect(await checkDatabaseSession({ migratedElsewhere: true })).toEqual([]);
  });

  it("warns, naming the fix, when the sessions' statement_timeout is another than configured", async () => {
    // The pool sends 5000 ms; a process configured for 7000 ms finds 5000 on its sessions.
    const sent = loadEnv().KEYWARD_DB_STATEMENT_TIMEOUT_MS;
    expect(await checkDatabaseSession()).toEqual([]); // the pool's connections are made now, with `sent`
    process.env.KEYWARD_DB_STATEMENT_TIMEOUT_MS = String(sent + 2000);
    const warnings = await checkDatabaseSession();
    expect(warnings).toEqual([
      `statement_timeout on the database sessions is ${sent} ms, not KEYWARD_DB_STATEMENT_TIMEOUT_MS=${sent + 2000}: ` +
        "the startup parameter did not reach PostgreSQL (a pooler dropped it?). Set it where the pooler's sessions inherit it: " +
        `ALTER ROLE <user> SET statement_timeout = '${sent + 2000}ms' (docs/reliability.md)`,
    ]);
  });

  it("stops start-up when the migrations went to another database than the one served", async () => {
    const name = `keyward_test_unmigrated_${randomBytes(4).toString("hex")}`;
    await admin(`CREATE DATABASE "${name}"`);
    try {
      const url = new URL(saved.DATABASE_URL!);
      url.pathname = `/${name}`;
      process.env.DATABASE_URL = url.toString();
      await closeDb();
      const err = await checkDatabaseSession({ migratedElsewhere: true }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SessionCheckError);
      expect((err as Error).message).toMatch(/was applied through KEYWARD_MIGRATE_DATABASE_URL but DATABASE_URL's database does not have it/);
      // Without migratedElsewhere nothing is asked about migrations.
      expect(await checkDatabaseSession()).toEqual([]);
    } finally {
      await closeDb();
      await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  });
});
