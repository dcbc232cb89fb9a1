/**
 * Pruning as operators run it: `keyward prune` in a child process, another process's run excluding it,
 * and the real server pruning on its schedule and answering the external scheduler's route over HTTP.
 * In a database of its own (a run prunes the whole table; other files keep expired keys on purpose).
 */
import { execFile } from "node:child_process";
import { afterAll, describe, expect, it, vi } from "vitest";
import { pruneExpiredKeys } from "@/lib/retention/prune";
import { makeSource, sql, fileDatabaseUrl } from "@/test/setup/db";
import { countKeys, insertKeys } from "@/test/setup/keys";
import { baseEnv, BIN, reservePort, ROOT, startKeyward, stopServer, type Server } from "@/test/setup/server";
import type { Json } from "@/test/setup/json";

vi.setConfig({ testTimeout: 120_000 }); // each CLI run starts Node, loads the schema engine and migrates

const spawned: Server[] = [];
afterAll(async () => {
  for (const s of spawned) await stopServer(s); // before the private database is dropped
});

type Run = { code: number; stdout: string; stderr: string };

function keyward(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, DATABASE_URL: fileDatabaseUrl() }, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("keyward prune", () => {
  it("deletes the expired keys in batches and prints what it deleted; recorded as the CLI's prune.run", async () => {
    const source = await makeSource();
    await insertKeys(source, 345, "now() - interval '1 hour'");
    await insertKeys(source, 7, "now() + interval '1 hour'", "live");

    const r = await keyward("prune", "--batch-size", "100", "--pause", "0");

    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^pruned 345 expired keys in 4 batches, \d+\.\d\d s, [\d,]+ keys\/s \(run \d+, stopped: drained\)\n$/);
    expect(await countKeys(source)).toBe(7);
    const runId = /\(run (\d+),/.exec(r.stdout)![1];
    const [run] = await sql<{ trigger: string; actor: string; rows: number; batches: number }>(
      "SELECT trigger, actor, rows, batches FROM prune_runs WHERE id = $1",
      [runId],
    );
    expect(run).toMatchObject({ trigger: "cli", rows: 345, batches: 4 });
    expect(run.actor).toMatch(/^cli:/);
    const [action] = await sql<{ actor: string; detail: Json }>(
      "SELECT actor, detail FROM audit_events WHERE kind = 'operator' AND detail->'target'->>'id' = $1",
      [runId],
    );
    expect(action.actor).toBe(run.actor);
    expect(action.detail).toMatchObject({ action: "prune.run", after: { rows: 345, batches: 4 } });

    const json = await keyward("prune", "--json", "--budget", "2s");
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).run).toMatchObject({ rows: 0, trigger: "cli", stopped: "drained" });
  });

  it("bad options → non-zero exit, the reason on stderr", async () => {
    const [size, budget] = await Promise.all([keyward("prune", "--batch-size", "0"), keyward("prune", "--budget", "soon")]);
    expect(size.code).toBe(1);
    expect(size.stderr).toMatch(/batchSize/);
    expect(budget.code).not.toBe(0);
    expect(budget.stderr).toMatch(/--budget/);
  });

  it("while another process prunes, it says so and deletes nothing", async () => {
    const source = await makeSource();
    await insertKeys(source, 1000, "now() - interval '1 hour'");
    const stop = new AbortController();
    let started!: () => void;
    const holding = new Promise<void>((r) => (started = r));
    // This process prunes slowly (a long pause after every batch) and holds the lock until aborted.
    const run = pruneExpiredKeys({ trigger: "schedule", batchSize: 10, pauseMs: 60_000, budgetMs: 3_600_000, signal: stop.signal, onBatch: () => started() });
    await holding;

    const r = await keyward("prune");
    stop.abort();

    expect(r.code).toBe(0);
    expect(r.stdout).toBe("skipped: another prune is running\n");
    const outcome = await run;
    expect("run" in outcome && outcome.run.rows).toBe(10);
    expect(await countKeys(source)).toBe(1000 - 10);
    await pruneExpiredKeys({ trigger: "cli", pauseMs: 0 });
  });
});

describe("keyward start", () => {
  it("prunes on its schedule, serves the external scheduler's route, and stops cleanly", async () => {
    const secret = "an-external-scheduler-secret-0123456789abcdef";
    const source = await makeSource();
    await insertKeys(source, 500, "now() - interval '1 hour'");
    await insertKeys(source, 3, "now() + interval '1 hour'", "live");
    // Runs before this server's (the tests above record some, with trigger 'schedule' too) are not its runs.
    const [{ before }] = await sql<{ before: number }>("SELECT coalesce(max(id), 0)::int AS before FROM prune_runs");
    const port = await reservePort();
    const server = await startKeyward(
      Object.assign(baseEnv(), {
        DATABASE_URL: fileDatabaseUrl(),
        PORT: String(port),
        HOSTNAME: "127.0.0.1",
        KEYWARD_PRUNE_INTERVAL_SECONDS: "1",
        KEYWARD_MAINTENANCE_SECRET: secret,
      }),
      spawned,
    );

    await expect.poll(() => countKeys(source), { timeout: 20_000, interval: 200 }).toBe(3);
    // A run's row is written when it starts and completed when it ends, just after its last batch commits:
    // wait for the first of this server's runs that deleted something to be recorded as finished.
    const firstRun = async () =>
      (
        await sql<{ rows: number; actor: string }>(
          "SELECT rows, actor FROM prune_runs WHERE trigger = 'schedule' AND id > $1 AND finished_at IS NOT NULL AND rows > 0 ORDER BY id LIMIT 1",
          [before],
        )
      )[0];
    await expect.poll(firstRun, { timeout: 20_000, interval: 100 }).toBeDefined();
    const scheduled = (await firstRun())!;
    expect(scheduled.rows).toBe(500);
    expect(scheduled.actor).toMatch(/^schedule@/);

    const url = `http://127.0.0.1:${port}/api/v1/maintenance/prune/external`;
    const wrong = await fetch(url, { method: "POST", headers: { "x-keyward-maintenance-secret": "nope" } });
    expect(wrong.status).toBe(401);
    expect((await wrong.json()).error.code).toBe("unauthorized");
    await insertKeys(source, 50, "now() - interval '1 hour'", "late");
    // The schedule runs every second; should it hold the lock at this instant, the answer is `skipped`.
    let body: Json;
    for (let i = 0; i < 10; i++) {
      const right = await fetch(url, { method: "POST", headers: { "x-keyward-maintenance-secret": secret } });
      expect(right.status).toBe(200);
      body = await right.json();
      if (body.run) break;
      expect(body).toEqual({ skipped: "another prune is running" });
    }
    expect(body.run).toMatchObject({ trigger: "external", actor: "external", stopped: "drained" });
    expect(await countKeys(source)).toBe(3);

    expect(await stopServer(server)).toBe(0);
    expect(server.output()).not.toMatch(/pruning failed/);
  });
});
