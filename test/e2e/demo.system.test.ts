/**
 * `keyward demo` as a user runs it (issue 14 §5): in a fresh directory, with DATABASE_URL pointing at this
 * run's test database, it must leave that database alone, seed ./.keyward-demo/ with the three senders'
 * history, and serve the console with a demo banner. Checked through the API as the demo admin.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sql } from "@/test/setup/db";
import { cookiesOf } from "@/test/setup/auth";
import { baseEnv, startKeyward, stopEmbeddedPostgres, stopServer, type Server } from "@/test/setup/server";

const spawned: Server[] = [];
let dir: string | undefined;

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
  if (dir) await stopEmbeddedPostgres(path.join(dir, ".keyward-demo"));
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

/** `keyward demo` in the project (as `npm run demo` runs it), its data in `demoDir` instead of ./.keyward-demo/. */
function startDemo(demoDir: string): Promise<Server> {
  return startKeyward(Object.assign(baseEnv(), { KEYWARD_DEMO_DIR: demoDir }), spawned, 400_000, "demo");
}

describe("keyward demo", () => {
  it("seeds its own embedded database (never DATABASE_URL) with three senders' history and serves it with a banner", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "keyward-demo-test-"));
    const server = await startDemo(path.join(dir, ".keyward-demo"));
    const base = server.baseUrl;
    expect(server.output()).toContain("DATABASE_URL is ignored");
    expect(server.output()).toMatch(/seeded 4 days: \d+ claims, \d+ duplicates, \d+ late duplicates/);
    expect(existsSync(path.join(dir, ".keyward-demo", "postgres", "PG_VERSION"))).toBe(true);
    expect(server.output()).toContain("database: embedded PostgreSQL 18 in");
    // The configured database was not touched.
    expect(await sql("SELECT 1 FROM auth_users WHERE username = 'demo'")).toEqual([]);

    const signIn = await fetch(`${base}/api/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: base },
      body: JSON.stringify({ username: "demo", password: "keyward-demo" }),
    });
    expect(signIn.status).toBe(200);
    const cookie = cookiesOf(signIn.headers);
    const get = async (p: string) => {
      const res = await fetch(base + p, { headers: { cookie } });
      expect(res.status, p).toBe(200);
      return res.json();
    };

    const { sources } = await get("/api/v1/sources");
    expect(sources.map((s: { name: string }) => s.name)).toEqual(["github", "orders", "stripe"]);
    const orders = await get("/api/v1/sources/orders/advice");
    expect(orders.observed.lateDuplicates).toBeGreaterThan(10);
    expect(orders.current.ttlSeconds).toBe(8 * 3600 + 300);
    // Its sender retries for up to 1.5 days; the forced replay's reclaims (1 d 6 h gaps) no longer push the
    // advice to 7 d (issue 23 §6: counted apart).
    expect(orders.recommended.ttlSeconds).toBeGreaterThanOrEqual(1.5 * 86400);
    expect(orders.recommended.ttlSeconds).toBeLessThan(7 * 86400);
    const stripe = await get("/api/v1/sources/stripe/advice");
    expect(stripe.observed.duplicates).toBeGreaterThanOrEqual(1000);
    expect(stripe.observed.maxAgeSeconds).toBeGreaterThan(3 * 86400);
    const github = await get("/api/v1/sources/github/advice");
    expect(github.observed.ageP999Seconds).toBeLessThanOrEqual(3600);
    const late = await get("/api/v1/sources/orders/late-duplicates?limit=500");
    expect(late.items.some((i: { viaReplay: boolean }) => i.viaReplay)).toBe(true);
    const replays = await get("/api/v1/replays");
    expect(replays.items.filter((r: { status: string }) => r.status === "completed")).toHaveLength(1);
    const letters = await get("/api/v1/dead-letters");
    expect(letters.items.length).toBeGreaterThan(5);
    const runs = await get("/api/v1/maintenance/prune?limit=500");
    expect(runs.runs.some((r: { stopped: string }) => r.stopped === "error")).toBe(true);
    const metrics = await get("/api/v1/metrics?source=stripe");
    expect(metrics.samples.length).toBeGreaterThan(100);

    const signInPage = await (await fetch(`${base}/sign-in`)).text();
    expect(signInPage).toContain("Demo data.");
    expect(signInPage).toContain("keyward-demo");
  }, 600_000);
});
