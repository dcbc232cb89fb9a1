/**
 * Smoke test of `keyward start` on the embedded database (no DATABASE_URL): a real server process on a
 * free port over a temporary KEYWARD_DATA_DIR, the CLI sharing its database while it runs, claims over
 * real HTTP, the CLI on its own while the server is down, and the keys surviving a restart.
 *
 * Serves the production build that the global setup keeps current (test/setup/global-setup.ts), with
 * --no-build.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseEnv, BIN, freePort, ROOT, startKeyward, stopServer, type Server } from "../setup/server";

let dataDir: string;
let port: number;
let server: Server | undefined;
/** Every server spawned, so afterAll stops even one that never finished starting. */
const spawned: Server[] = [];

/** The child's environment: the embedded database in dataDir, never the test run's DATABASE_URL. */
function childEnv(): NodeJS.ProcessEnv {
  return Object.assign(baseEnv(["DATABASE_URL"]), { KEYWARD_DATA_DIR: dataDir, PORT: String(port), HOSTNAME: "127.0.0.1" });
}

const startServer = () => startKeyward(childEnv(), spawned);

function keyward(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(), timeout: 60_000 }, (err, stdout, stderr) => {
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
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "keyward-e2e-"));
  port = await freePort();
}, 660_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 30_000);

describe("keyward start on the embedded database", () => {
  it(
    "serves claims over HTTP, shares its database with the CLI, and keeps keys across a restart",
    async () => {
      server = await startServer();
      const firstOutput = server.output();
      // It says which database it uses: the embedded one in the data directory, not a DATABASE_URL.
      expect(firstOutput).toContain(`[keyward] database: embedded PostgreSQL (PGlite) in ${path.join(dataDir, "pgdata")}`);
      expect(firstOutput).not.toContain("(DATABASE_URL)");
      expect(firstOutput).toContain(`console and API on http://127.0.0.1:${port}`);

      // The server owns the data directory; the CLI must go through its port.
      const owner = JSON.parse(await readFile(path.join(dataDir, "owner.json"), "utf8")) as { pid: number; port: number };
      expect(owner.pid).toBe(server.child.pid);
      expect(owner.port).toBeGreaterThan(0);

      const src = await keyward("source", "create", "emb-e2e", "--retry-window", "1d", "--queue-lag", "1d", "--clock-skew", "5m", "--replay", "1d");
      expect(src.stderr).toBe("");
      expect(src.code).toBe(0);
      expect(src.stdout).toContain("created source emb-e2e: TTL 3d5m");
      const created = await keyward("apikey", "create", "--name", "e2e", "--scopes", "claims:write");
      expect(created.code).toBe(0);
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

      // Stop with SIGTERM: a clean exit that gives the data directory back.
      expect(await stopServer(server)).toBe(0);
      expect(server.output()).toContain("SIGTERM: shutting down");
      expect(existsSync(path.join(dataDir, "owner.json"))).toBe(false);

      // With no server running, the CLI opens the data directory itself, and hands it back when done.
      const listed = await keyward("source", "list");
      expect(listed.code).toBe(0);
      expect(listed.stdout).toMatch(/^emb-e2e\s+3d5m/m);
      expect(existsSync(path.join(dataDir, "owner.json"))).toBe(false);

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
    180_000,
  );
});
