/**
 * The lockout race, through the real server: bursts of 40 and 200 concurrent sign-ins for one username
 * (and 200 from one address) check at most 5 (20) passwords, and the right password sent once the slots
 * are taken is refused. "Checked" is counted from the operator action log: every attempt that reached
 * the password check records `failed` or `ok`, every attempt refused before it records `refused`.
 *
 * The server trusts X-Forwarded-For, so the username bursts come from many addresses (no address limit
 * in play) and the address burst from one.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, uniq } from "@/test/setup/db";
import { stopServer, type Server } from "@/test/setup/server";
import { makeUser, signIn, startTestServer, type SignedIn } from "@/test/setup/auth";

const spawned: Server[] = [];
let baseUrl: string;

/** A documentation-range IPv6 address (RFC 3849) of this test's own. */
const newAddress = () => `2001:db8:${randomBytes(6).toString("hex").match(/.{4}/g)!.join(":")}::1`;

beforeAll(async () => {
  // The race's correctness is tested, not connection latency (test/db/faults.e2e.test.ts bounds that): a cold
  // burst of 200 on a loaded 2-core machine can wait longer than the 3 s default for one of 10 pool connections.
  ({ baseUrl } = await startTestServer(spawned, { KEYWARD_TRUST_PROXY: "true", KEYWARD_DB_CONNECT_TIMEOUT_MS: "20000" }));
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

/** How the attempts on this username ended, from the action log. */
async function outcomes(username: string): Promise<Record<string, number>> {
  const rows = await sql<{ outcome: string; n: number }>(
    `SELECT detail->>'outcome' AS outcome, count(*)::int AS n FROM audit_events
     WHERE kind = 'operator' AND detail->>'action' = 'sign_in' AND detail->'target'->>'id' = $1 GROUP BY 1`,
    [username],
  );
  return Object.fromEntries(rows.map((r) => [r.outcome, r.n]));
}

const checked = (o: Record<string, number>) => (o.failed ?? 0) + (o.ok ?? 0);

function statuses(results: SignedIn[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

describe("concurrent sign-ins for one username", () => {
  it.each([40, 200])("%i at once: exactly 5 passwords are checked, the rest get 429 without a check", async (n) => {
    const user = await makeUser("viewer");
    const results = await Promise.all(Array.from({ length: n }, (_, i) => signIn(baseUrl, user.username, `wrong-password-${i}`, newAddress())));
    expect(statuses(results)).toEqual({ 401: 5, 429: n - 5 });
    const o = await outcomes(user.username);
    expect(checked(o)).toBe(5);
    expect(o).toEqual({ failed: 5, refused: n - 5 });
    for (const r of results.filter((x) => x.status === 429)) {
      expect(r.body.error.code).toBe("locked_out");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    // Locked: the right password is refused too, unchecked.
    const late = await signIn(baseUrl, user.username, user.password, newAddress());
    expect(late.status).toBe(429);
    expect(late.cookie).toBe("");
    expect(checked(await outcomes(user.username))).toBe(5);
  }, 120_000);

  it("the right password sent into a burst once its 5 slots are taken does not sign in", async () => {
    const user = await makeUser("viewer");
    const burst = Array.from({ length: 39 }, (_, i) => signIn(baseUrl, user.username, `wrong-password-${i}`, newAddress()));
    // Wait until the burst has taken every slot (its password checks may still be running), then send the
    // right password.
    const attempts = async () =>
      (await sql<{ attempts: number }>("SELECT attempts FROM sign_in_throttle WHERE scope = 'user' AND key = $1", [user.username]))[0]?.attempts;
    await expect.poll(attempts, { message: "the burst takes the 5 slots", timeout: 20_000, interval: 5 }).toBe(5);
    const right = signIn(baseUrl, user.username, user.password, newAddress());
    const results = await Promise.all([...burst, right]);
    const mine = await right;
    expect(mine.status).toBe(429);
    expect(mine.cookie).toBe("");
    expect(statuses(results)).toEqual({ 401: 5, 429: 35 });
    expect(await outcomes(user.username)).toEqual({ failed: 5, refused: 35 });
    const [{ n }] = await sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM auth_sessions s JOIN auth_users u ON u.id = s.user_id WHERE u.username = $1",
      [user.username],
    );
    expect(n).toBe(0);
  }, 120_000);
});

describe("concurrent sign-ins from one address", () => {
  it("200 at once, each for another username: exactly 20 passwords are checked", async () => {
    const address = newAddress();
    const names = Array.from({ length: 200 }, (_, i) => uniq(`guess${i}`));
    const results = await Promise.all(names.map((name, i) => signIn(baseUrl, name, `guess-password-${i}`, address)));
    expect(statuses(results)).toEqual({ 401: 20, 429: 180 });
    const [{ failed, refused }] = await sql<{ failed: number; refused: number }>(
      `SELECT count(*) FILTER (WHERE detail->>'outcome' = 'failed')::int AS failed,
              count(*) FILTER (WHERE detail->>'outcome' = 'refused')::int AS refused
       FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'sign_in' AND detail->>'address' = $1`,
      [address],
    );
    expect({ failed, refused }).toEqual({ failed: 20, refused: 180 });
    for (const r of results.filter((x) => x.status === 429)) expect(r.body.error.message).toMatch(/from this address/);
  }, 180_000);
});
