/**
 * Upgrading from the previous embedded default (PGlite): a data directory written by it is carried over to
 * the embedded PostgreSQL on the first `keyward start` (any CLI command goes through the same open), with
 * nothing lost; a data directory holding both an old and a new database is refused with what to do.
 *
 * test/fixtures/pglite-data-dir.tar.xz is a real KEYWARD_DATA_DIR written by the previous release (main at
 * 84c9637, PGlite 0.5.14) through its own CLI and claim code:
 *   keyward source create legacy-src --retry-window 1d --queue-lag 1d --clock-skew 5m --replay 1d
 *   keyward apikey create --name legacy --scopes claims:write          → LEGACY_KEY below
 *   keyward user create legacy-admin --role admin                      → LEGACY_PASSWORD below
 *   claimEvents: legacy_0 … legacy_49 claimed, then legacy_0 once more (a duplicate)
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { EMBEDDED_DATABASE, EMBEDDED_ROLE, embeddedStatus } from "@/lib/db/embedded";
import { baseEnv, BIN, reservePort, ROOT, startKeyward, stopEmbeddedPostgres, stopServer, type Server } from "@/test/setup/server";

const FIXTURE = path.join(ROOT, "test/fixtures/pglite-data-dir.tar.xz");
const LEGACY_KEY = "kw_t00i6wplmt0e_u0J_IOcFPj2E-kM1N_kskBPgAVXLAdfe4IUJBI-bO6I";
const LEGACY_PASSWORD = "hqATHUkH0GwWpFUYclmIe8Ud";

/** A first start creates the cluster and migrates: generous on the shared, loaded test machine. */
const EMBEDDED_START_MS = 180_000;
let work: string;
let port: number;
const spawned: Server[] = [];

function env(dataDir: string): NodeJS.ProcessEnv {
  return Object.assign(baseEnv(["DATABASE_URL"]), { KEYWARD_DATA_DIR: dataDir, PORT: String(port), HOSTNAME: "127.0.0.1",
    // Correctness, not latency, is tested here (connection bounds: test/db/faults.e2e.test.ts): on the shared
    // test machine (load 20+ on 2 cores) opening a connection in a busy process can exceed the 3 s default.
    KEYWARD_DB_CONNECT_TIMEOUT_MS: "20000" });
}

function keyward(dataDir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: env(dataDir), timeout: 240_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** A statement on the embedded cluster a server runs for `dataDir`, as its own role with its password. */
async function embeddedSql<Row extends object>(dataDir: string, text: string): Promise<Row[]> {
  const { port: pgPort, password } = embeddedStatus(dataDir);
  const c = new pg.Client({ host: "127.0.0.1", port: pgPort, user: EMBEDDED_ROLE, password, database: EMBEDDED_DATABASE });
  await c.connect();
  try {
    return (await c.query<Row>(text)).rows;
  } finally {
    await c.end();
  }
}

async function unpack(name: string): Promise<string> {
  const dir = path.join(work, name);
  execFileSync("mkdir", ["-p", dir]);
  execFileSync("tar", ["xJf", FIXTURE, "-C", dir]);
  return dir;
}

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), "keyward-upgrade-"));
  port = await reservePort();
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  if (work) await stopEmbeddedPostgres(path.join(work, "server"));
  if (work) await rm(work, { recursive: true, force: true });
}, 30_000);

describe("a PGlite data directory of the previous release", () => {
  it("`keyward start` carries it over: keys, duplicates, API keys, users and sessions keep working", async () => {
    const dataDir = await unpack("server");
    const server = await startKeyward(env(dataDir), spawned, EMBEDDED_START_MS);
    const out = server.output();
    expect(out).toContain(`found a database of the previous embedded default (PGlite) in ${path.join(dataDir, "pgdata")}`);
    expect(out).toMatch(/carried over \d+ tables \(\d+ rows\)/);
    // Its migrations came along: only those newer than the fixture are applied, never the first ones again.
    expect(out).toMatch(/\[keyward\] (database schema is up to date|applied migrations: )/);
    expect(out).not.toMatch(/applied migrations: .*20261202000000_init/);
    expect(existsSync(path.join(dataDir, "pgdata"))).toBe(false);
    expect(existsSync(path.join(dataDir, "pgdata.pglite-carried-over", "PG_VERSION"))).toBe(true);

    const claim = async (eventId: string) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/claims`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${LEGACY_KEY}` },
        body: JSON.stringify({ source: "legacy-src", eventId, eventType: "charge.succeeded" }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    // Every key came along with its count and expiry. The fixture's keys were claimed with a 3-day TTL when it
    // was written, so by now the calendar has expired them; they are given another day (as if the upgrade had
    // come in time) so that a claim can show they are live keys, not new ones.
    const carried = await embeddedSql<{ event_id: string; duplicate_count: number }>(
      dataDir,
      "SELECT event_id, duplicate_count FROM dedup_keys WHERE source = 'legacy-src' ORDER BY event_id",
    );
    expect(carried.length).toBe(50);
    expect(carried.filter((k) => k.duplicate_count > 0).map((k) => [k.event_id, k.duplicate_count])).toEqual([["legacy_0", 1]]);
    await embeddedSql(dataDir, "UPDATE dedup_keys SET expires_at = now() + interval '1 day' WHERE source = 'legacy-src'");
    // A key claimed (and once duplicated) under PGlite is still a duplicate, with its count carried along.
    expect(await claim("legacy_0")).toMatchObject({ status: 200, body: { outcome: "duplicate", duplicateCount: 2 } });
    expect(await claim("legacy_49")).toMatchObject({ status: 200, body: { outcome: "duplicate", duplicateCount: 1 } });
    expect(await claim("after-upgrade")).toMatchObject({ status: 201, body: { outcome: "claimed" } });
    // The admin made under PGlite signs in with the same password (so auth_users and auth_secret came along).
    const signIn = await fetch(`http://127.0.0.1:${port}/api/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: `http://127.0.0.1:${port}` },
      body: JSON.stringify({ username: "legacy-admin", password: LEGACY_PASSWORD }),
    });
    expect(signIn.status).toBe(200);
    expect(await stopServer(server)).toBe(0);

    // Only once: the next start finds nothing to carry over.
    const again = await startKeyward(env(dataDir), spawned, EMBEDDED_START_MS);
    expect(again.output()).not.toContain("carrying it over");
    expect(await claim("after-upgrade")).toMatchObject({ status: 200, body: { outcome: "duplicate" } });
    expect(await stopServer(again)).toBe(0);
  }, 420_000);

  it("a directory holding both a carried-over and a PGlite database is refused by the CLI, naming the fix", async () => {
    // PGlite's files put back beside the database carried over above: Keyward will not pick one silently.
    const dataDir = path.join(work, "server");
    await cp(path.join(dataDir, "pgdata.pglite-carried-over"), path.join(dataDir, "pgdata"), { recursive: true });
    const refused = await keyward(dataDir, "source", "list");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("already holds one too: Keyward will not merge them");
    expect(refused.stderr).toContain(`move ${path.join(dataDir, "pgdata")} out of ${dataDir}`);
    expect(refused.stdout).toBe("");
    expect(embeddedStatus(dataDir).pid).toBeUndefined(); // the server it started for the command is stopped again
    // Moved out as the message says, the CLI works on the carried-over database.
    await rm(path.join(dataDir, "pgdata"), { recursive: true });
    const listed = await keyward(dataDir, "source", "list");
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^legacy-src\s+3d5m/m);
  }, 120_000);
});
