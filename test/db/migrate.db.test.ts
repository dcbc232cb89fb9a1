/**
 * lib/db/migrate.ts: applies prisma/migrations like `prisma migrate deploy`, and a failing migration
 * rolls back whole and then blocks start-up with a message naming it.
 */
import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, inject, it } from "vitest";
import { migrate, MigrationError, MIGRATIONS_DIR } from "@/lib/db/migrate";

async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void>; run: (q: string) => Promise<pg.QueryResult> }> {
  const server = inject("serverUrl");
  const name = `keyward_migrate_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const u = new URL(server);
  u.pathname = `/${name}`;
  const url = u.toString();
  return {
    url,
    run: async (q) => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        return await c.query(q);
      } finally {
        await c.end();
      }
    },
    drop: async () => {
      const c = new pg.Client({ connectionString: server });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await c.end();
    },
  };
}

describe("migrate", () => {
  it("applies every migration once and records it as prisma migrate deploy does", async () => {
    const db = await freshDatabase();
    try {
      const onDisk = (await readdir(MIGRATIONS_DIR, { withFileTypes: true }))
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort();
      expect(onDisk).toContain("20261202000000_init");
      const applied = await migrate(db.url);
      expect(applied).toEqual(onDisk);
      expect(await migrate(db.url)).toEqual([]);
      const { rows } = await db.run(
        "SELECT migration_name, finished_at IS NOT NULL AS finished, length(checksum) AS checksum_len FROM _prisma_migrations ORDER BY migration_name",
      );
      expect(rows).toEqual(onDisk.map((migration_name) => ({ migration_name, finished: true, checksum_len: 64 })));
    } finally {
      await db.drop();
    }
  });

  it("skips the engine only when nothing is pending: a new migration, or an applied one rolled back, is applied", async () => {
    const db = await freshDatabase();
    const dir = await mkdtemp(path.join(os.tmpdir(), "keyward-migrations-"));
    try {
      await cp(MIGRATIONS_DIR, dir, { recursive: true });
      expect((await migrate(db.url, dir)).length).toBeGreaterThan(0);
      expect(await migrate(db.url, dir)).toEqual([]);
      await mkdir(path.join(dir, "20991231000000_extra"));
      await writeFile(path.join(dir, "20991231000000_extra", "migration.sql"), "CREATE TABLE migrate_extra (x int);\n");
      expect(await migrate(db.url, dir)).toEqual(["20991231000000_extra"]);
      expect(await migrate(db.url, dir)).toEqual([]);
      // Recorded as rolled back (what `prisma migrate resolve --rolled-back` does): applied again.
      await db.run("DROP TABLE migrate_extra");
      await db.run("UPDATE _prisma_migrations SET rolled_back_at = now() WHERE migration_name = '20991231000000_extra'");
      expect(await migrate(db.url, dir)).toEqual(["20991231000000_extra"]);
      expect((await db.run("SELECT to_regclass('migrate_extra') IS NOT NULL AS present")).rows).toEqual([{ present: true }]);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await db.drop();
    }
  });

  it("drops the SSO tokens stored before they were sealed, and keeps sealed ID tokens and other accounts' rows", async () => {
    const db = await freshDatabase();
    const dir = await mkdtemp(path.join(os.tmpdir(), "keyward-migrations-"));
    const scrub = "20261208000000_scrub_oidc_tokens";
    try {
      await cp(MIGRATIONS_DIR, dir, { recursive: true });
      await rm(path.join(dir, scrub), { recursive: true });
      await migrate(db.url, dir);
      await db.run(`INSERT INTO auth_users (id, name, email) VALUES ('u1', 'a', 'a@x'), ('u2', 'b', 'b@x'), ('u3', 'c', 'c@x')`);
      await db.run(
        `INSERT INTO auth_accounts (id, account_id, provider_id, user_id, access_token, refresh_token, id_token, password) VALUES
           ('old', 'sub-1', 'oidc', 'u1', 'ya29.access', '1//refresh', 'eyJhbGciOi.plain.jwt', NULL),
           ('sealed', 'sub-2', 'oidc', 'u2', NULL, NULL, 'v1:aXY=:dGFn:Y3Q=', NULL),
           ('local', 'u3', 'credential', 'u3', 'not-oidc', NULL, NULL, 'scrypt-hash')`,
      );
      await cp(path.join(MIGRATIONS_DIR, scrub), path.join(dir, scrub), { recursive: true });
      expect(await migrate(db.url, dir)).toEqual([scrub]);
      const { rows } = await db.run("SELECT id, access_token, refresh_token, id_token, password FROM auth_accounts ORDER BY id");
      expect(rows).toEqual([
        { id: "local", access_token: "not-oidc", refresh_token: null, id_token: null, password: "scrypt-hash" },
        { id: "old", access_token: null, refresh_token: null, id_token: null, password: null },
        { id: "sealed", access_token: null, refresh_token: null, id_token: "v1:aXY=:dGFn:Y3Q=", password: null },
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await db.drop();
    }
  });

  it("rolls a failing migration back whole, then refuses to continue with a clear message", async () => {
    const db = await freshDatabase();
    const dir = await mkdtemp(path.join(os.tmpdir(), "keyward-migrations-"));
    try {
      await cp(MIGRATIONS_DIR, dir, { recursive: true });
      await mkdir(path.join(dir, "20991231000000_broken"));
      await writeFile(
        path.join(dir, "20991231000000_broken", "migration.sql"),
        "CREATE TABLE broken_first (x int);\nCREATE FUNCTION broken_fn() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;\nSELECT 1 / 0;\n",
      );
      const first = await migrate(db.url, dir).catch((e: unknown) => e);
      expect(first).toBeInstanceOf(MigrationError);
      expect((first as Error).message).toBe(
        "migration 20991231000000_broken failed: division by zero (SQLSTATE 22012); it was rolled back",
      );
      // The earlier migration stays applied; nothing of the failed one is left behind.
      const { rows } = await db.run(
        "SELECT to_regclass('sources') IS NOT NULL AS init, to_regclass('broken_first') AS broken, to_regprocedure('broken_fn()') AS fn",
      );
      expect(rows).toEqual([{ init: true, broken: null, fn: null }]);

      const second = await migrate(db.url, dir).catch((e: unknown) => e);
      expect(second).toBeInstanceOf(MigrationError);
      expect((second as Error).message).toContain("20991231000000_broken failed earlier and blocks later ones");
    } finally {
      await rm(dir, { recursive: true, force: true });
      await db.drop();
    }
  });
});
