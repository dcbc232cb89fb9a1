/**
 * `keyward partitions status|enable|disable` and KEYWARD_DEDUP_MODE=partition at setup, as a user runs
 * them (`node bin/keyward.cjs …` in a child process), against a database of this file's own.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { makeSource, sql } from "@/test/setup/db";


const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "bin/keyward.cjs");

type Run = { code: number; stdout: string; stderr: string };

function keyward(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function relkind(): Promise<string> {
  const [{ k }] = await sql<{ k: string }>("SELECT relkind::text AS k FROM pg_class WHERE oid = 'dedup_keys'::regclass");
  return k;
}

// Each run is a fresh Node process compiling the CLI with tsx: seconds each on a loaded 2-core machine.
describe("keyward partitions", { timeout: 600_000 }, () => {
  it("setup mode converts only an empty table; enable, status and disable report what they did", async () => {
    const single = await keyward(["partitions", "status"]);
    expect(single.code).toBe(0);
    expect(single.stdout).toContain("mode: single");

    // A new install: the table is empty, so `migrate` switches it.
    const setup = await keyward(["migrate"], { KEYWARD_DEDUP_MODE: "partition" });
    expect(setup.code).toBe(0);
    expect(setup.stdout).toMatch(/KEYWARD_DEDUP_MODE=partition: dedup table switched to partition mode \(\d+ partitions\)/);
    expect(await relkind()).toBe("p");

    const status = await keyward(["partitions", "status", "--json"]);
    expect(status.code).toBe(0);
    const parsed = JSON.parse(status.stdout) as { mode: string; partitions: { name: string; isDefault: boolean }[] };
    expect(parsed.mode).toBe("partition");
    expect(parsed.partitions.filter((p) => p.isDefault).map((p) => p.name)).toEqual(["dedup_keys_default"]);
    expect(parsed.partitions.length).toBeGreaterThanOrEqual(4); // today + 1 day (no source yet) + 3 ahead… + DEFAULT

    const again = await keyward(["partitions", "enable"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already in partition mode");

    const off = await keyward(["partitions", "disable"]);
    expect(off.code).toBe(0);
    expect(off.stdout).toMatch(/single-table mode restored: \d+ partitions merged, 0 keys moved/);
    expect(await relkind()).toBe("r");

    // Keys present: setup mode leaves the table alone and says how to convert it.
    const source = await makeSource();
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
       SELECT $1, 'k' || i, 't', 'done', gen_random_uuid(), 'claimed', now() + i * interval '1 hour' FROM generate_series(1, 30) i`,
      [source],
    );
    const kept = await keyward(["migrate"], { KEYWARD_DEDUP_MODE: "partition" });
    expect(kept.code).toBe(0);
    expect(kept.stdout).toContain("left in single-table mode; convert it with `keyward partitions enable`");
    expect(await relkind()).toBe("r");

    const on = await keyward(["partitions", "enable"]);
    expect(on.code).toBe(0);
    expect(on.stdout).toMatch(/partition mode enabled: \d+ partitions created \(and a DEFAULT one\), 30 keys moved, \d+\.\d\d s/);
    expect(await relkind()).toBe("p");
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [source]);
    expect(n).toBe(30);
    const table = await keyward(["partitions", "status"]);
    expect(table.stdout).toContain("mode: partition");
    expect(table.stdout).toMatch(/dedup_keys_p\d{8}\s+\d{4}-\d\d-\d\dT00:00:00\.000Z/);
  });
});
