/**
 * `keyward start` on the embedded database (no DATABASE_URL): a real server process on a free port over a
 * temporary KEYWARD_DATA_DIR, the CLI sharing its database while it runs, claims over real HTTP, the CLI on
 * its own while the server is down, and the keys surviving a restart. Its lifecycle: a CLI command started
 * right after the server (while it creates the cluster and migrates) waits and succeeds; SIGTERM stops the
 * PostgreSQL server with it; after `kill -9` of Keyward the next start recovers. Its privacy: a connection
 * without the password, or with a wrong one, is refused.
 *
 * Serves the production build that the global setup keeps current (test/setup/global-setup.ts), with
 * --no-build.
 */
import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { embeddedStatus } from "@/lib/db/embedded";
import { baseEnv, BIN, reservePort, ROOT, startKeyward, stopEmbeddedPostgres, stopServer, type Server } from "@/test/setup/server";
import type { Json } from "@/test/setup/json";

/** A first start creates the cluster and migrates: generous on the shared, loaded test machine. */
const EMBEDDED_START_MS = 180_000;
let dataDir: string;
let port: number;
let server: Server | undefined;
/** Every server spawned, so afterAll stops even one that never finished starting. */
const spawned: Server[] = [];

/** The child's environment: the embedded database in dataDir, never the test run's DATABASE_URL. */
function childEnv(): NodeJS.ProcessEnv {
  return Object.assign(baseEnv(["DATABASE_URL"]), { KEYWARD_DATA_DIR: dataDir, PORT: String(port), HOSTNAME: "127.0.0.1",
    // Correctness, not latency, is tested here (connection bounds: test/db/faults.e2e.test.ts): on the shared
    // test machine (load 20+ on 2 cores) opening a connection in a busy process can exceed the 3 s default.
    KEYWARD_DB_CONNECT_TIMEOUT_MS: "20000" });
}

const startServer = () => startKeyward(childEnv(), spawned, EMBEDDED_START_MS);

function keyward(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(), timeout: 240_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function claimOverHttp(key: string, body: Record<string, unknown>) {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/claims`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, Json> };
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "keyward-e2e-"));
  port = await reservePort();
}, 660_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  await stopEmbeddedPostgres(dataDir);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 30_000);

describe("keyward start on the embedded database", () => {
  it(
    "serves claims over HTTP, shares its database with the CLI, and keeps keys across a restart",
    async () => {
      server = await startServer();
      const firstOutput = server.output();
      // It says which database it uses: the embedded PostgreSQL in the data directory, not a DATABASE_URL.
      expect(firstOutput).toMatch(new RegExp(`\\[keyward\\] database: embedded PostgreSQL 18 in ${path.join(dataDir, "postgres")}, listening on 127\\.0\\.0\\.1:\\d+`));
      expect(firstOutput).not.toContain("(DATABASE_URL)");
      expect(firstOutput).toContain(`console and API on http://127.0.0.1:${port}`);

      // The server is registered as the cluster's user; the password file is the owner's alone.
      expect(await readdir(path.join(dataDir, "users"))).toEqual([String(server.child.pid)]);
      expect(statSync(path.join(dataDir, "password")).mode & 0o777).toBe(0o600);
      const status = embeddedStatus(dataDir);
      expect(status.port).toBeGreaterThan(0);
      expect(status.password).toMatch(/^[0-9a-f]{48}$/);

      const src = await keyward("source", "create", "emb-e2e", "--retry-window", "1d", "--queue-lag", "1d", "--clock-skew", "5m", "--replay", "1d");
      expect(src.stderr).toBe("");
      expect(src.code).toBe(0);
      expect(src.stdout).toContain("created source emb-e2e: TTL 3d5m");
      const created = await keyward("apikey", "create", "--name", "e2e", "--scopes", "claims:write");
      expect(created.code, created.stderr).toBe(0);
      const key = created.stdout.trim();
      expect(key).toMatch(/^kw_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/);

      // Printed right after it started listening, to a first-time user.
      expect(server.output()).toMatch(/no source yet/);

      // Claims over real HTTP against the running server see what the CLI wrote.
      const event = { source: "emb-e2e", eventId: "evt_1", eventType: "charge.succeeded" };
      const first = await claimOverHttp(key, event);
      expect(first.status).toBe(201);
      expect(first.body.outcome).toBe("claimed");
      const ttlMs = Date.parse(first.body.expiresAt) - Date.parse(first.body.firstSeenAt);
      expect(ttlMs).toBe((3 * 86400 + 300) * 1000);
      const dup = await claimOverHttp(key, event);
      expect(dup.status).toBe(200);
      expect(dup.body).toMatchObject({ outcome: "duplicate", duplicateCount: 1 });

      const state = await fetch(`http://127.0.0.1:${port}/api/v1/claims/emb-e2e/evt_1`, { headers: { authorization: `Bearer ${key}` } });
      expect(state.status).toBe(200);
      expect(await state.json()).toMatchObject({ state: "alive", duplicateCount: 1 });
      const anon = await claimOverHttp("kw_000000000000_" + "A".repeat(43), event);
      expect(anon.status).toBe(401);
      expect(anon.body).toMatchObject({ error: { code: "unauthorized" } });

      // An event id with reserved URL characters round-trips through the key-state path.
      const oddId = "evt/ü 1?x=1&y#2%";
      expect((await claimOverHttp(key, { ...event, eventId: oddId })).status).toBe(201);
      const odd = await fetch(`http://127.0.0.1:${port}/api/v1/claims/emb-e2e/${encodeURIComponent(oddId)}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(odd.headers.get("x-content-type-options")).toBe("nosniff");
      expect(await odd.json()).toMatchObject({ state: "alive", eventId: oddId });

      // Stop with SIGTERM: a clean exit that stops PostgreSQL too (fast shutdown) and gives the data directory back.
      expect(await stopServer(server)).toBe(0);
      expect(server.output()).toContain("SIGTERM: shutting down");
      expect(embeddedStatus(dataDir).pid).toBeUndefined();
      expect(existsSync(path.join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
      expect(await readdir(path.join(dataDir, "users"))).toEqual([]);

      // With no server running, the CLI starts PostgreSQL itself, and stops it when done.
      const listed = await keyward("source", "list");
      expect(listed.code).toBe(0);
      expect(listed.stdout).toMatch(/^emb-e2e\s+3d5m/m);
      expect(embeddedStatus(dataDir).pid).toBeUndefined();

      // Start again on the same data directory: the key is still there.
      server = await startServer();
      expect(server.output()).toContain("[keyward] database schema is up to date");
      const again = await claimOverHttp(key, event);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ outcome: "duplicate", duplicateCount: 2, firstSeenAt: first.body.firstSeenAt });
      const fresh = await claimOverHttp(key, { ...event, eventId: "evt_2" });
      expect(fresh.status).toBe(201);
      expect(server.output()).not.toMatch(/no source yet|no API key yet/);
    },
    420_000,
  );

  it("is private: asks every client for the password (scram), refuses a wrong one, listens on loopback only", async () => {
    const { port: pgPort, password } = embeddedStatus(dataDir);
    expect(pgPort).toBeGreaterThan(0);
    // The attack from issue 21: any local user, any role name, no password. The server's first answer to the
    // startup packet must be a SASL authentication request (R, code 10), never AuthenticationOk (code 0).
    expect(await firstAuthRequest(pgPort!, "nobody", "anything")).toBe(10);
    expect(await firstAuthRequest(pgPort!, "keyward", "keyward")).toBe(10);
    const wrong = new pg.Client({ connectionString: `postgresql://keyward:${"0".repeat(48)}@127.0.0.1:${pgPort}/keyward` });
    await expect(wrong.connect()).rejects.toMatchObject({ code: "28P01" });
    const noPassword = new pg.Client({ connectionString: `postgresql://keyward:@127.0.0.1:${pgPort}/keyward` });
    await expect(noPassword.connect()).rejects.toThrow(/password/);
    // With the password it works, and reaches what the server keeps (so the password is what guards it).
    const right = new pg.Client({ connectionString: `postgresql://keyward:${password}@127.0.0.1:${pgPort}/keyward` });
    await right.connect();
    const { rows } = await right.query("SELECT current_setting('listen_addresses') AS listen, current_setting('unix_socket_directories') AS sockets");
    await right.end();
    expect(rows[0]).toEqual({ listen: "127.0.0.1", sockets: "" });
    // Not reachable on any other address of this machine.
    const external = Object.values(os.networkInterfaces()).flat().find((a) => a && a.family === "IPv4" && !a.internal);
    if (external) expect(await canConnect(external.address, pgPort!)).toBe(false);
  });

  it("after kill -9 of Keyward, the next start stops the orphaned PostgreSQL and serves", async () => {
    const before = embeddedStatus(dataDir);
    expect(before.pid).toBeGreaterThan(0);
    server!.child.kill("SIGKILL");
    await server!.exited;
    // PostgreSQL outlives the killed process (it runs detached, like any server); the next start must cope.
    expect(embeddedStatus(dataDir).pid).toBe(before.pid);
    server = await startServer();
    expect(server.output()).toContain(`stopping the embedded PostgreSQL (pid ${before.pid}) left running by a Keyward process that ended without stopping it`);
    const after = embeddedStatus(dataDir);
    expect(after.pid).toBeGreaterThan(0);
    expect(after.pid).not.toBe(before.pid);
    const listed = await keyward("source", "list");
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^emb-e2e\s+3d5m/m);
    expect(await stopServer(server)).toBe(0);
    expect(embeddedStatus(dataDir).pid).toBeUndefined();
  }, 300_000);

  it("a CLI command run while `keyward start` creates the cluster on a new data directory waits for it and succeeds", async () => {
    const fresh = await mkdtemp(path.join(os.tmpdir(), "keyward-e2e-fresh-"));
    const saved = dataDir;
    dataDir = fresh;
    try {
      const starting = startServer();
      starting.catch(() => {});
      // The server is in start-up, holding the data directory's lock: it has begun creating the cluster.
      const booting = spawned[spawned.length - 1];
      // (A server that exits instead fails the wait at once, with its output.)
      await Promise.race([
        starting.then(() => {}),
        vi.waitFor(() => expect(booting.output()).toContain("creating the embedded PostgreSQL cluster (initdb)"), {
          timeout: EMBEDDED_START_MS,
          interval: 50,
        }),
      ]);
      const created = await keyward("user", "create", "early", "--role", "admin", "--generate-password");
      expect(created.stderr).not.toMatch(/failed|error/i);
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout.trim()).toMatch(/^\S{12,}$/);
      server = await starting;
      expect(server.output()).not.toMatch(/cannot start|migration failed/);
      const users = await keyward("user", "list");
      expect(users.stdout).toMatch(/^early\s+admin/m);
      expect(await stopServer(server)).toBe(0);
    } finally {
      dataDir = saved;
      await stopEmbeddedPostgres(fresh);
      await rm(fresh, { recursive: true, force: true });
    }
  }, 300_000);
});

/** Sends a StartupMessage and returns the code of the server's first Authentication message (or -1). */
function firstAuthRequest(port: number, user: string, database: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    const params = Buffer.from(`user\0${user}\0database\0${database}\0\0`);
    const head = Buffer.alloc(8);
    head.writeInt32BE(8 + params.length, 0);
    head.writeInt32BE(196608, 4); // protocol 3.0
    socket.once("connect", () => socket.write(Buffer.concat([head, params])));
    socket.once("data", (d: Buffer) => {
      socket.destroy();
      resolve(d[0] === 0x52 ? d.readInt32BE(5) : -1);
    });
    socket.once("error", reject);
    socket.setTimeout(5000, () => {
      socket.destroy();
      reject(new Error("no answer to the startup packet"));
    });
  });
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}
