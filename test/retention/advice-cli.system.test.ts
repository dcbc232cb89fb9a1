/**
 * `keyward source advice` as a user runs it: `node bin/keyward.cjs …` in a child process against this run's
 * test database — the text report, `--json` (the API's exact answer), and the refusals.
 */
import { parseInput } from "@/lib/http/validate";
import { createSourceRequest } from "@/lib/sources/schema";
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { adviceSchema } from "@/lib/retention/advice-schema";
import { cliPrincipal } from "@/lib/auth/principal";
import { createSource } from "@/lib/sources/sources";
import { sql, uniq } from "@/test/setup/db";

const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "bin/keyward.cjs");
const H = 3600;

function keyward(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env }, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("keyward source advice", { timeout: 200_000 }, () => {
  it("prints the observed ages, the late duplicates, the recommendation with reasons and the command to apply it; --json is the API's answer", async () => {
    const name = uniq("cli-adv");
    await createSource(parseInput(createSourceRequest, { name, retryWindowSeconds: 6 * H, queueLagSeconds: H, clockSkewSeconds: 300, replaySeconds: H }), cliPrincipal());
    const counts = Array.from({ length: 15 }, (_, i) => (i === 3 ? 1500 : i === 5 ? 20 : 0));
    await sql("INSERT INTO duplicate_ages (bucket, source, counts, max_age_seconds) VALUES (date_trunc('minute', now()) - interval '1 day', $1, $2, 18000)", [name, counts]);
    await sql(
      `INSERT INTO late_duplicates (source, event_id, event_type, first_claim_at, late_claim_at, gap_seconds, key_state)
       VALUES ($1, 'ord-1', 't', now() - interval '2 days', now() - interval '1 day', 86400, 'pruned')`,
      [name],
    );

    const text = await keyward("source", "advice", name, "--window", "7d");
    expect(text.stderr).toBe("");
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`${name}, last 7d`);
    expect(text.stdout).toContain("observed:    1,520 duplicates; age p50 ≤ 10 min, p99 ≤ 5 h, p99.9 ≤ 5 h, max 5 h; 1 late duplicate (processed twice)");
    expect(text.stdout).toMatch(/≤ 10 min\s+█+ 1,500/);
    expect(text.stdout).toContain("current:     TTL 8h5m (6h + 1h + 5m + 1h)");
    expect(text.stdout).toContain("recommended: TTL 3d (1d + 1h + 5m + 1d22h55m)");
    expect(text.stdout).toContain("- 1 event was processed twice in the last 7 d");
    expect(text.stdout).toContain(`apply with:  keyward source update ${name} --retry-window 1d --queue-lag 1h --clock-skew 5m --replay 1d22h55m`);
    expect(text.stdout).toMatch(/ord-1 {2}first .* {2}again .* {2}gap 1 d/);

    const json = await keyward("source", "advice", name, "--json");
    expect(json.code).toBe(0);
    const parsed = adviceSchema.strict().parse(JSON.parse(json.stdout));
    expect(parsed.window).toBe("30d");
    expect(parsed.recommended?.ttlSeconds).toBe(3 * 86400); // a 1 d window: the design's floor is 3 d
    expect(parsed.observed.lateDuplicates).toBe(1);
  });

  it("an unknown source and a bad window fail with the reason on stderr and exit code 1", async () => {
    const missing = await keyward("source", "advice", "no-such-source-cli");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('keyward: no source named "no-such-source-cli"');
    const bad = await keyward("source", "advice", "no-such-source-cli", "--window", "2y");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/keyward: invalid request: window: "2y" is not a duration/);
  });
});
