/** `keyward replay list/show/pause/resume/cancel/retry-failed` as a user runs it (a child process on this run's database). */
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { createPreflight } from "@/lib/replay/preflight";
import { startReplay } from "@/lib/replay/replays";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";
import { startReplayRequest } from "@/lib/replay/schema";
import { parseInput } from "@/lib/http/validate";

const BIN = path.resolve(import.meta.dirname, "../../bin/keyward.cjs");

function keyward(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: process.env, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe("keyward replay", { timeout: 240_000 }, () => {
  it("lists, shows, pauses and cancels a replay; an unknown id exits 1 with the reason", async () => {
    const source = await makeSource();
    await readyForReplay(source, "http://127.0.0.1:9/never");
    await seedDeadLetters(source, [uniq("a"), uniq("b")]);
    const pf = await createPreflight({ source }, cliPrincipal());
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"] }), uniq("k"), cliPrincipal());

    const list = await keyward("replay", "list", "--source", source);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+SOURCE\s+STATUS\s+TOTAL/);
    expect(list.stdout).toContain(replayId);
    expect(list.stdout).toMatch(/running\s+2\s+0/);
    expect(list.stdout).toMatch(/\bOUTCOME\s+HEALTH\b/);
    // Running: no outcome yet, its health.
    expect(list.stdout).toMatch(/\s0\s+-\s+ok\s/);

    const shown = await keyward("replay", "show", replayId, "--json");
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: replayId, status: "running", total: 2, counts: { pending: 2 } });

    expect((await keyward("replay", "pause", replayId)).stdout.trim()).toBe(`replay ${replayId}: paused`);
    const cancelled = await keyward("replay", "cancel", replayId);
    expect(cancelled.stdout.trim()).toBe(`replay ${replayId}: cancelled`);
    const again = await keyward("replay", "resume", replayId);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/cannot resume a cancelled replay/);
    // Where it sent, as the executor noted it (no worker runs here: noted by hand).
    await sql("UPDATE replays SET destination = 'http://127.0.0.1:9/never' WHERE id = $1", [replayId]);
    const text = await keyward("replay", "show", replayId);
    expect(text.stdout).toContain(`replay ${replayId} of ${source}: cancelled, 2/2 settled`);
    expect(text.stdout).toContain("  sent to http://127.0.0.1:9/never");
    // Finished: its outcome, never a health of "ok".
    expect(text.stdout).toContain("  outcome cancelled: cancelled after 0 of 2 delivered");
    expect(text.stdout).not.toContain("health");
    const listed = await keyward("replay", "list", "--source", source);
    expect(listed.stdout).toMatch(/\s0\s+cancelled\s+-\s+no\s/);
    // --outcome and --state: the API's filter (GET /api/v1/replays?outcome&state), a bad value exits 1 naming it.
    expect((await keyward("replay", "list", "--source", source, "--outcome", "cancelled")).stdout).toContain(replayId);
    expect((await keyward("replay", "list", "--source", source, "--state", "finished")).stdout).toContain(replayId);
    expect((await keyward("replay", "list", "--source", source, "--outcome", "failed")).stdout.trim()).toBe("no replays");
    expect((await keyward("replay", "list", "--source", source, "--state", "running")).stdout.trim()).toBe("no replays");
    const bad = await keyward("replay", "list", "--outcome", "ok");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/outcome/);

    // retry-failed: nothing failed yet (exit 1, the reason); with a failure, a new preflight of it.
    const none = await keyward("replay", "retry-failed", replayId);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/no failed items/);
    await sql(
      "UPDATE replay_items SET outcome = 'failed', last_error = 'HTTP 500 Internal Server Error' WHERE replay_id = $1 AND seq = 0",
      [replayId],
    );
    const retried = await keyward("replay", "retry-failed", replayId);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toMatch(new RegExp(`^preflight [0-9a-f-]{36} of ${source} \\(retry of replay ${replayId}\\): 1 item\\(s\\)`));
    expect(retried.stdout).toContain("never_processed 1");

    const missing = await keyward("replay", "show", "00000000-0000-4000-8000-000000000000");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no replay/);
  });
});
