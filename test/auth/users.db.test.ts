/**
 * Console accounts (lib/auth/users.ts) against a real PostgreSQL: creation with a generated or given
 * password, validation, the last-active-admin rule, sessions ending on a role change, a disable or a
 * password reset, and the operator action row written in the same transaction as each change.
 *
 * The last-admin rule depends on how many active admins the whole database holds, and other test files
 * create admins concurrently in the run's shared database. So this file works in a database of its own
 * (created and migrated here on the same server, dropped at the end), where it knows every admin.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { closeDb } from "@/lib/db/client";
import { migrate } from "@/lib/db/migrate";
import { cliPrincipal, type Principal, type UserPrincipal } from "@/lib/auth/principal";
import { roleCapabilities } from "@/lib/auth/roles";
import { sessionPrincipal } from "@/lib/auth/session";
import { signIn } from "@/lib/auth/sign-in";
import { countActiveAdmins, createUser, createUserRequest, resetPassword, resetPasswordRequest, updateUser } from "@/lib/auth/users";
import { KeywardError } from "@/lib/errors";
import { sql, uniq } from "@/test/setup/db";
import { cookiesOf } from "@/test/setup/auth";
import { parseInput } from "@/lib/http/validate";

const CLI = cliPrincipal();
/** createUser with the request as POST /api/v1/users (and the CLI) parse it. */
const create = async (input: unknown, actor: Principal = CLI) => createUser(parseInput(createUserRequest, input), actor);
let dropDatabase: () => Promise<void>;

beforeAll(async () => {
  const server = inject("serverUrl");
  const name = `keyward_users_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(server);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  // Nothing has opened the shared client yet in this file's worker; point it at the private database.
  await closeDb();
  process.env.DATABASE_URL = url.toString();
  // The rules below demote every other admin: make sure that happens only in this file's database.
  const [{ db }] = await sql<{ db: string }>("SELECT current_database() AS db");
  if (db !== name) throw new Error(`users.test.ts must run in its own database, not ${db}`);
  dropDatabase = async () => {
    await closeDb();
    const c = new pg.Client({ connectionString: server });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await c.end();
  };
});

afterAll(async () => {
  await dropDatabase?.();
});

const newName = (prefix = "u") => uniq(prefix).toLowerCase();

/** Signs in in-process as the session route does; returns the request headers a browser would then send. */
async function sessionHeaders(username: string, password: string): Promise<Headers> {
  const req = new Request("http://localhost:3000/api/v1/session", { method: "POST", headers: { origin: "http://localhost:3000" } });
  const { headers } = await signIn({ username, password }, req, `users-test-${username}`);
  return new Headers({ cookie: cookiesOf(headers) });
}

const sessionCount = async (username: string) =>
  (
    await sql<{ n: number }>("SELECT count(*) AS n FROM auth_sessions s JOIN auth_users u ON u.id = s.user_id WHERE u.username = $1", [
      username,
    ])
  )[0].n;

type ActionRow = { actor: string; detail: { action: string; outcome: string; before?: unknown; after?: unknown } };
const actionsOn = (username: string) =>
  sql<ActionRow>(
    "SELECT actor, detail FROM audit_events WHERE kind = 'operator' AND detail->'target'->>'type' = 'user' AND detail->'target'->>'id' = $1 AND detail->>'action' <> 'sign_in' ORDER BY at, id",
    [username],
  );

async function expectKeywardError(p: Promise<unknown>, status: number, code?: string): Promise<KeywardError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KeywardError);
  expect((err as KeywardError).status).toBe(status);
  if (code) expect((err as KeywardError).code).toBe(code);
  return err as KeywardError;
}

describe("createUser", () => {
  it("without a password: generates one of 24 characters, returned once, stored only as a hash that signs in", async () => {
    const username = newName();
    const r = await create({ username, role: "viewer" }, CLI);
    expect(r.generated).toBe(true);
    expect(r.password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(r.user).toMatchObject({ username, role: "viewer", disabled: false, sso: false, lastSeenAt: null });
    expect(Object.keys(r.user)).not.toContain("password");
    const [row] = await sql<{ password: string }>(
      "SELECT a.password FROM auth_accounts a JOIN auth_users u ON u.id = a.user_id WHERE u.username = $1 AND a.provider_id = 'credential'",
      [username],
    );
    expect(row.password).not.toContain(r.password);
    expect(row.password.length).toBeGreaterThan(r.password.length);
    const principal = await sessionPrincipal(await sessionHeaders(username, r.password));
    expect(principal).toMatchObject({ kind: "user", username, role: "viewer" });
    // Two generated passwords differ.
    expect((await create({ username: newName(), role: "viewer" }, CLI)).password).not.toBe(r.password);
  });

  it("with a password: uses it (not generated), and the username is stored trimmed and lower-cased", async () => {
    const username = newName();
    const password = "correct horse battery";
    const r = await create({ username: `  ${username.toUpperCase()} `, role: "operator", password, name: "Op Erator" }, CLI);
    expect(r).toMatchObject({ generated: false, password });
    expect(r.user).toMatchObject({ username, name: "Op Erator", role: "operator" });
    expect(await sessionPrincipal(await sessionHeaders(username, password))).toMatchObject({ role: "operator" });
    await expect(sessionHeaders(username, "correct horse battery!")).rejects.toMatchObject({ status: 401 });
  });

  it("a duplicate username (in any case) → 409 user_exists, and only the first is recorded", async () => {
    const username = newName();
    await create({ username, role: "viewer" }, CLI);
    await expectKeywardError(create({ username, role: "admin" }, CLI), 409, "user_exists");
    await expectKeywardError(create({ username: username.toUpperCase(), role: "admin" }, CLI), 409, "user_exists");
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM auth_users WHERE username = $1", [username]);
    expect(n).toBe(1);
    expect((await actionsOn(username)).map((a) => a.detail.action)).toEqual(["user.create"]);
    const [{ role }] = await sql<{ role: string }>("SELECT role FROM auth_users WHERE username = $1", [username]);
    expect(role).toBe("viewer");
  });

  it.each([
    ["a one-letter username", { username: "a", role: "viewer" }],
    ["a username with a space", { username: "bad name", role: "viewer" }],
    ["a username starting with '-'", { username: "-dash", role: "viewer" }],
    ["an unknown role", { username: "valid-name-role", role: "root" }],
    ["the role 'none'", { username: "valid-name-none", role: "none" }],
    ["an 11-character password", { username: "valid-name-pw", role: "viewer", password: "elevenchars" }],
    ["an unknown field", { username: "valid-name-extra", role: "viewer", admin: true }],
  ])("%s → 422, nothing created", async (_, input) => {
    const before = (await sql<{ n: number }>("SELECT count(*) AS n FROM auth_users"))[0].n;
    await expectKeywardError(create(input, CLI), 422);
    expect((await sql<{ n: number }>("SELECT count(*) AS n FROM auth_users"))[0].n).toBe(before);
  });

  it("12 characters is enough", async () => {
    const r = await create({ username: newName(), role: "viewer", password: "twelve-chars" }, CLI);
    expect(r.generated).toBe(false);
  });
});

describe("the last active admin", () => {
  /** Leaves exactly the named users as the database's active admins (this database is the file's own). */
  async function onlyAdmins(...usernames: string[]) {
    await sql("UPDATE auth_users SET role = 'viewer' WHERE role = 'admin' AND NOT (username = ANY($1))", [usernames]);
    expect(await countActiveAdmins()).toBe(usernames.length);
  }

  it("cannot be demoted or disabled (409 last_admin); nothing changes and nothing is recorded", async () => {
    const a = newName("admin");
    await create({ username: a, role: "admin" }, CLI);
    await onlyAdmins(a);
    await expectKeywardError(updateUser(a, { role: "operator" }, CLI), 409, "last_admin");
    await expectKeywardError(updateUser(a, { disabled: true }, CLI), 409, "last_admin");
    await expectKeywardError(updateUser(a, { role: "viewer", disabled: true }, CLI), 409, "last_admin");
    const [row] = await sql<{ role: string; disabled: boolean }>("SELECT role, disabled FROM auth_users WHERE username = $1", [a]);
    expect(row).toEqual({ role: "admin", disabled: false });
    expect((await actionsOn(a)).map((x) => x.detail.action)).toEqual(["user.create"]);
    // A change that keeps them an active admin is fine.
    expect((await updateUser(a, { role: "admin", disabled: false }, CLI)).role).toBe("admin");
  });

  it("can be demoted once another active admin exists; a disabled admin does not count", async () => {
    const a = newName("admin");
    const b = newName("admin");
    await create({ username: a, role: "admin" }, CLI);
    await create({ username: b, role: "admin" }, CLI);
    await onlyAdmins(a, b);
    await updateUser(b, { disabled: true }, CLI);
    expect(await countActiveAdmins()).toBe(1);
    await expectKeywardError(updateUser(a, { role: "viewer" }, CLI), 409, "last_admin");
    await updateUser(b, { disabled: false }, CLI);
    expect((await updateUser(a, { role: "viewer" }, CLI)).role).toBe("viewer");
    expect(await countActiveAdmins()).toBe(1);
    await expectKeywardError(updateUser(b, { disabled: true }, CLI), 409, "last_admin");
  });

  it("two admins demoting each other at once: exactly one succeeds, one admin remains", async () => {
    const a = newName("admin");
    const b = newName("admin");
    await create({ username: a, role: "admin" }, CLI);
    await create({ username: b, role: "admin" }, CLI);
    await onlyAdmins(a, b);
    const results = await Promise.allSettled([updateUser(a, { role: "viewer" }, CLI), updateUser(b, { disabled: true }, CLI)]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(rejected).toHaveLength(1);
    expect(rejected[0].reason).toMatchObject({ status: 409, code: "last_admin" });
    expect(await countActiveAdmins()).toBe(1);
  });
});

describe("changes end the user's sessions", () => {
  it("a role change: the old session is no one; the next sign-in carries the new role", async () => {
    const username = newName();
    const { password } = await create({ username, role: "viewer" }, CLI);
    const headers = await sessionHeaders(username, password);
    expect(await sessionPrincipal(headers)).toMatchObject({ role: "viewer" });
    expect(await sessionCount(username)).toBe(1);
    const updated = await updateUser(username, { role: "operator" }, CLI);
    expect(updated.role).toBe("operator");
    expect(await sessionPrincipal(headers)).toBeNull();
    expect(await sessionCount(username)).toBe(0);
    expect(await sessionPrincipal(await sessionHeaders(username, password))).toMatchObject({
      role: "operator",
      capabilities: roleCapabilities("operator"),
    });
  });

  it("disabling: every session ends and sign-in is refused; enabling lets them sign in again", async () => {
    const username = newName();
    const { password } = await create({ username, role: "operator" }, CLI);
    const one = await sessionHeaders(username, password);
    const two = await sessionHeaders(username, password);
    expect(await sessionCount(username)).toBe(2);
    await updateUser(username, { disabled: true }, CLI);
    expect(await sessionPrincipal(one)).toBeNull();
    expect(await sessionPrincipal(two)).toBeNull();
    expect(await sessionCount(username)).toBe(0);
    await expect(sessionHeaders(username, password)).rejects.toMatchObject({ status: 401, message: "invalid username or password" });
    await updateUser(username, { disabled: false }, CLI);
    expect(await sessionPrincipal(await sessionHeaders(username, password))).toMatchObject({ username });
  });

  it("a password reset: sessions end, the old password fails, the new one (generated, 24 chars) works", async () => {
    const username = newName();
    const { password: old } = await create({ username, role: "viewer" }, CLI);
    const headers = await sessionHeaders(username, old);
    const r = await resetPassword(username, CLI);
    expect(r.generated).toBe(true);
    expect(r.password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(await sessionPrincipal(headers)).toBeNull();
    await expect(sessionHeaders(username, old)).rejects.toMatchObject({ status: 401 });
    expect(await sessionPrincipal(await sessionHeaders(username, r.password))).toMatchObject({ username });
    // The route's and the CLI's schema refuses it before resetPassword.
    expect(() => parseInput(resetPasswordRequest, { password: "short" })).toThrow(expect.objectContaining({ status: 422 }));
    await expectKeywardError(resetPassword(newName("nobody"), CLI), 404, "user_not_found");
  });
});

describe("every change is in the operator action log, in the same transaction", () => {
  it("records create, update, disable, enable and reset with actor, target and before/after", async () => {
    const username = newName();
    const actor: UserPrincipal = {
      kind: "user",
      id: "x",
      username: "the-admin",
      name: "The Admin",
      role: "admin",
      capabilities: roleCapabilities("admin"),
    };
    await create({ username, role: "viewer", password: "a-long-password-1" }, actor);
    await updateUser(username, { role: "operator" }, actor);
    await updateUser(username, { disabled: true }, CLI);
    await updateUser(username, { disabled: false }, CLI);
    await resetPassword(username, actor, "a-long-password-2");
    const rows = await actionsOn(username);
    expect(rows.map((r) => [r.actor, r.detail.action, r.detail.outcome])).toEqual([
      ["user:the-admin", "user.create", "ok"],
      ["user:the-admin", "user.update", "ok"],
      [`cli:${CLI.name}`, "user.disable", "ok"],
      [`cli:${CLI.name}`, "user.enable", "ok"],
      ["user:the-admin", "user.reset_password", "ok"],
    ]);
    expect(rows[0].detail.after).toEqual({ role: "viewer" });
    expect(rows[1].detail).toMatchObject({ before: { role: "viewer", disabled: false }, after: { role: "operator", disabled: false } });
    expect(rows[2].detail).toMatchObject({ before: { role: "operator", disabled: false }, after: { role: "operator", disabled: true } });
    expect(rows[3].detail).toMatchObject({ before: { disabled: true }, after: { disabled: false } });
    const all = JSON.stringify(rows);
    expect(all).not.toContain("a-long-password-1");
    expect(all).not.toContain("a-long-password-2");
  });

  it("when the action row cannot be written, the change itself is rolled back (and sessions survive)", async () => {
    const victim = newName("victim");
    const refused = newName("refused");
    const { password } = await create({ username: victim, role: "viewer" }, CLI);
    const headers = await sessionHeaders(victim, password);
    // Make writing the record fail for these two users only.
    await sql(`
      CREATE OR REPLACE FUNCTION users_test_refuse_record() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.detail->'target'->>'id' IN ('${victim}', '${refused}') THEN
          RAISE EXCEPTION 'users.test: the action log refuses this row';
        END IF;
        RETURN NEW;
      END $$`);
    await sql("CREATE TRIGGER users_test_refuse_record BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION users_test_refuse_record()");
    try {
      await expect(updateUser(victim, { role: "admin" }, CLI)).rejects.toThrow();
      await expect(updateUser(victim, { disabled: true }, CLI)).rejects.toThrow();
      await expect(resetPassword(victim, CLI, "another-password-1")).rejects.toThrow();
      await expect(create({ username: refused, role: "admin" }, CLI)).rejects.toThrow();
    } finally {
      await sql("DROP TRIGGER users_test_refuse_record ON audit_events");
      await sql("DROP FUNCTION users_test_refuse_record()");
    }
    const [row] = await sql<{ role: string; disabled: boolean }>("SELECT role, disabled FROM auth_users WHERE username = $1", [victim]);
    expect(row).toEqual({ role: "viewer", disabled: false });
    expect(await sessionPrincipal(headers)).toMatchObject({ username: victim, role: "viewer" });
    expect(await sessionPrincipal(await sessionHeaders(victim, password))).toMatchObject({ username: victim });
    expect(await sql("SELECT 1 FROM auth_users WHERE username = $1", [refused])).toEqual([]);
    expect((await actionsOn(victim)).map((r) => r.detail.action)).toEqual(["user.create"]);
  });
});
