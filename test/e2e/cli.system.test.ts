/**
 * The `keyward` command line as a user runs it: `node bin/keyward.cjs …` in a child process against
 * this run's test database (DATABASE_URL), checking stdout, stderr, exit codes and the database.
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey, post } from "@/test/setup/http";
import { signIn } from "@/lib/auth/sign-in";
import { sessionPrincipal } from "@/lib/auth/session";

const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "bin/keyward.cjs");

type Run = { code: number; stdout: string; stderr: string };

// Each `keyward` run is a fresh Node process that compiles the CLI with tsx (seconds each, far more on a
// loaded 2-core machine), and a test runs several in turn: the default 30 s is too tight.
const CLI_TEST_TIMEOUT_MS = 120_000;

function keyward(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe("keyward source", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("create: TTL = the sum of the four durations, stored and printed", async () => {
    const name = uniq("cli");
    const r = await keyward("source", "create", name, "--retry-window", "3d", "--queue-lag", "1d", "--clock-skew", "5m", "--replay", "2d12h");
    // A 3-day retry window calls for at least 7 days: created, with the invariant check's warning.
    expect(r.stderr.trim()).toBe("warning: TTL 6d12h5m is below the floor of 7d the design sets for a 3d retry window: late retries and replays may be processed twice");
    expect(r.code).toBe(0);
    const ttl = 3 * 86400 + 86400 + 300 + 2 * 86400 + 12 * 3600;
    expect(r.stdout).toContain(`created source ${name}: TTL 6d12h5m (${ttl} s)`);
    const [row] = await sql<Record<string, number>>(
      "SELECT retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds FROM sources WHERE name = $1",
      [name],
    );
    expect(row).toEqual({
      retry_window_seconds: 259200,
      queue_lag_seconds: 86400,
      clock_skew_seconds: 300,
      replay_seconds: 216000,
      ttl_seconds: ttl,
    });

    // list shows it with its TTL and parts, as a table and as JSON.
    const [table, json] = await Promise.all([keyward("source", "list"), keyward("source", "list", "--json")]);
    expect(table.code).toBe(0);
    const line = table.stdout.split("\n").find((l) => l.startsWith(name + " "));
    expect(line?.split(/\s+/)).toEqual([name, "6d12h5m", "3d", "1d", "5m", "2d12h"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^NAME\s+TTL\s+RETRY WINDOW/);
    const listed = (JSON.parse(json.stdout) as { name: string; ttlSeconds: number }[]).find((s) => s.name === name);
    expect(listed?.ttlSeconds).toBe(ttl);
  });

  it("create --preset fills the parts, prints no warning, and update/extend change the TTL for new claims", async () => {
    const name = uniq("cli");
    const created = await keyward("source", "create", name, "--preset", "stripe");
    expect(created.stderr).toBe("");
    expect(created.stdout).toContain(`created source ${name}: TTL 7d (604800 s), preset stripe`);
    const updated = await keyward("source", "update", name, "--dead-letter-retention", "30d");
    expect(updated.code).toBe(0);
    expect(updated.stderr).toMatch(/^warning: dead letters are kept 30d/m);
    const extended = await keyward("source", "extend", name);
    expect(extended.stdout).toContain(`extended 0 live keys of ${name} to TTL 7d`);
    const presets = await keyward("source", "presets");
    expect(presets.stdout).toMatch(/^stripe\s+7d\s+3d\s+1d\s+5m/m);
  });

  it("a bad duration → non-zero exit, the reason on stderr, nothing created", async () => {
    const name = uniq("cli");
    const r = await keyward("source", "create", name, "--retry-window", "3x", "--queue-lag", "1d", "--clock-skew", "5m", "--replay", "3d");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('"3x" is not a duration');
    expect(r.stderr).toMatch(/--retry-window/);
    expect(r.stdout).not.toContain("created source");
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM sources WHERE name = $1", [name]);
    expect(n).toBe(0);
  });

  it("a TTL over 90 days, a bad name or an existing source → non-zero exit with the domain message", async () => {
    const existing = await makeSource();
    const [tooLong, badName, dup] = await Promise.all([
      keyward("source", "create", uniq("cli"), "--retry-window", "80d", "--queue-lag", "5d", "--clock-skew", "1d", "--replay", "5d"),
      keyward("source", "create", "Bad.Name", "--retry-window", "1d", "--queue-lag", "0s", "--clock-skew", "0s", "--replay", "0s"),
      keyward("source", "create", existing, "--retry-window", "1d", "--queue-lag", "0s", "--clock-skew", "0s", "--replay", "0s"),
    ]);
    expect(tooLong.code).toBe(1);
    expect(tooLong.stderr).toMatch(/^keyward: .*90 days/m);
    expect(badName.code).toBe(1);
    expect(badName.stderr).toMatch(/^keyward: invalid request: name/m);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain(`source "${existing}" already exists`);
  });
});

describe("keyward apikey", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("create prints the key once on stdout; it authenticates; list never shows it; revoke → 401 at once", async () => {
    const name = uniq("svc");
    const created = await keyward("apikey", "create", "--name", name, "--scopes", "claims:write, claims:read");
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^kw_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/);
    expect(created.stdout.split("\n").filter(Boolean)).toHaveLength(1); // nothing else on stdout: pipe-friendly
    expect(created.stderr).toContain(`created API key ${name}`);
    expect(created.stderr).toContain("shown once");
    expect(created.stderr).not.toContain(key);
    const [row] = await sql<{ scopes: string[] }>("SELECT scopes FROM api_keys WHERE name = $1", [name]);
    expect(row.scopes.sort()).toEqual(["claims:read", "claims:write"]);

    // The printed key works against the claim route.
    const source = await makeSource();
    const claimed = await post(claimRoute, { source, eventId: uniq("evt"), eventType: "t" }, { key });
    expect(claimed.status).toBe(201);

    const [table, json] = await Promise.all([keyward("apikey", "list"), keyward("apikey", "list", "--json")]);
    expect(table.code).toBe(0);
    const secret = key.slice(-43);
    for (const out of [table.stdout, table.stderr, json.stdout, json.stderr]) {
      expect(out).not.toContain(key);
      expect(out).not.toContain(secret);
    }
    const line = table.stdout.split("\n").find((l) => l.includes(` ${name} `));
    expect(line).toBeDefined();
    expect(line).toContain(key.split("_")[1]); // the public id is shown
    const listed = (JSON.parse(json.stdout) as Record<string, unknown>[]).find((k) => k.name === name)!;
    expect(Object.keys(listed).sort()).toEqual(["createdAt", "id", "lastUsedAt", "name", "revokedAt", "scopes"]);
    expect(listed.lastUsedAt).not.toBeNull(); // stamped by the claim above

    const revoked = await keyward("apikey", "revoke", name);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`revoked API key ${name}`);
    const after = await post(claimRoute, { source, eventId: uniq("evt"), eventType: "t" }, { key });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("unauthorized");
  });

  it("revoking an unknown key, or creating one with a bad scope → non-zero exit", async () => {
    const { name } = await makeApiKey(["read"]);
    const [unknown, badScope, dup] = await Promise.all([
      keyward("apikey", "revoke", uniq("nobody")),
      keyward("apikey", "create", "--name", uniq("svc"), "--scopes", "claims:admin"),
      keyward("apikey", "create", "--name", name, "--scopes", "read"),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/keyward: no API key with id or name/);
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toMatch(/scopes/);
    expect(badScope.stdout).not.toMatch(/kw_/);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("already exists");
    expect(dup.stdout).toBe("");
  });
});

/** Signs in in-process as POST /api/v1/session does; resolves to the signed-in username, or rejects. */
async function signInAs(username: string, password: string): Promise<string | undefined> {
  const req = new Request("http://localhost:3000/api/v1/session", { method: "POST", headers: { origin: "http://localhost:3000" } });
  const { headers } = await signIn({ username, password }, req, `cli-test-${username}`);
  const cookie = headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");
  return (await sessionPrincipal(new Headers({ cookie })))?.username;
}

describe("keyward user", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("create without a terminal prints a generated password once on stdout; it signs in; list shows the user; disable stops sign-in", async () => {
    const name = uniq("cli").toLowerCase();
    const created = await keyward("user", "create", name, "--role", "viewer");
    expect(created.code).toBe(0);
    const lines = created.stdout.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1); // only the password: pipe-friendly
    const password = lines[0];
    expect(password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(created.stderr).toContain(`created viewer ${name}`);
    expect(created.stderr).toContain("shown once");
    expect(created.stderr).not.toContain(password);
    expect(await signInAs(name, password)).toBe(name);

    const [table, json] = await Promise.all([keyward("user", "list"), keyward("user", "list", "--json")]);
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^USERNAME\s+ROLE\s+STATUS/);
    const line = table.stdout.split("\n").find((l) => l.startsWith(name + " "));
    expect(line?.split(/\s+/).slice(0, 4)).toEqual([name, "viewer", "active", "password"]);
    const listed = (JSON.parse(json.stdout) as { username: string; role: string; disabled: boolean }[]).find((u) => u.username === name);
    expect(listed).toMatchObject({ role: "viewer", disabled: false });
    for (const out of [table.stdout, json.stdout]) expect(out).not.toContain(password);

    const disabled = await keyward("user", "disable", name);
    expect(disabled.code).toBe(0);
    expect(disabled.stdout).toContain(`${name} is disabled`);
    await expect(signInAs(name, password)).rejects.toMatchObject({ status: 401, message: "invalid username or password" });
    const after = await keyward("user", "list");
    expect(after.stdout.split("\n").find((l) => l.startsWith(name + " "))?.split(/\s+/).slice(0, 3)).toEqual([name, "viewer", "disabled"]);
    const [row] = await sql<{ n: number }>(
      "SELECT count(*) AS n FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'user.disable' AND detail->'target'->>'id' = $1 AND actor LIKE 'cli:%'",
      [name],
    );
    expect(row.n).toBe(1);
  });

  it("a bad role or an existing name → non-zero exit, no password printed", async () => {
    const name = uniq("cli").toLowerCase();
    expect((await keyward("user", "create", name, "--role", "viewer")).code).toBe(0);
    const [badRole, dup] = await Promise.all([
      keyward("user", "create", uniq("cli").toLowerCase(), "--role", "root"),
      keyward("user", "create", name, "--role", "admin"),
    ]);
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toMatch(/role/);
    expect(badRole.stdout).toBe("");
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain("already exists");
    expect(dup.stdout).toBe("");
  });
});
