/**
 * The sign-in throttle's slot reservation against the real database (lib/auth/throttle.ts,
 * keyward_sign_in_reserve): however many attempts arrive at once, at most 5 per username and 20 per
 * address may check a password in a window; a username and an address are counted together or not at
 * all; a success forgives; an expired window starts afresh. The HTTP-level bursts are in
 * lockout-race.test.ts.
 */
import { randomInt } from "node:crypto";
import { describe, expect, it } from "vitest";
import { forgiveSignInAttempt, reserveSignInAttempt, THROTTLE, type AttemptSlot } from "@/lib/auth/throttle";
import { sql, uniq } from "@/test/setup/db";

const newAddress = () => `203.0.${randomInt(256)}.${randomInt(1, 255)}:${uniq("a")}`;

type Row = { scope: string; key: string; attempts: number; locked: boolean };
const rowsOf = (username: string, address: string) =>
  sql<Row>(
    `SELECT scope, key, attempts, coalesce(locked_until > now(), false) AS locked FROM sign_in_throttle
     WHERE (scope = 'user' AND key = $1) OR (scope = 'addr' AND key = $2) ORDER BY scope DESC`,
    [username, address],
  );

const allowed = (slots: AttemptSlot[]) => slots.filter((s) => s.allowed);

describe("reserving sign-in attempts", () => {
  it.each([40, 200])("%i concurrent attempts for one username: exactly 5 may check a password, the rest are refused", async (n) => {
    const username = uniq("victim");
    const slots = await Promise.all(Array.from({ length: n }, () => reserveSignInAttempt(username, newAddress())));
    expect(allowed(slots)).toHaveLength(THROTTLE.userMaxAttempts);
    // The one that took the last slot locked the username there and then.
    expect(slots.filter((s) => s.allowed && s.locks === "user")).toHaveLength(1);
    for (const s of slots.filter((x) => !x.allowed)) {
      expect(s).toMatchObject({ allowed: false, scope: "user" });
      if (!s.allowed) expect(s.retryAfterSeconds).toBeGreaterThan(0);
      if (!s.allowed) expect(s.retryAfterSeconds).toBeLessThanOrEqual(THROTTLE.lockSeconds);
    }
    const [user] = await sql<Row>("SELECT attempts, coalesce(locked_until > now(), false) AS locked FROM sign_in_throttle WHERE scope = 'user' AND key = $1", [username]);
    expect(user).toMatchObject({ attempts: 5, locked: true });
  });

  it("200 concurrent attempts from one address, each for another username: exactly 20 may check a password", async () => {
    const address = newAddress();
    const slots = await Promise.all(Array.from({ length: 200 }, (_, i) => reserveSignInAttempt(uniq(`guess${i}`), address)));
    expect(allowed(slots)).toHaveLength(THROTTLE.addrMaxAttempts);
    expect(slots.filter((s) => !s.allowed).every((s) => !s.allowed && s.scope === "addr")).toBe(true);
  });

  it("counts the username and the address together or not at all: a refusal by one spends nothing of the other", async () => {
    const address = newAddress();
    for (let i = 0; i < THROTTLE.addrMaxAttempts; i++) expect((await reserveSignInAttempt(uniq("g"), address)).allowed).toBe(true);
    const username = uniq("bystander");
    for (let i = 0; i < 10; i++) expect(await reserveSignInAttempt(username, address)).toMatchObject({ allowed: false, scope: "addr" });
    expect(await rowsOf(username, "-")).toEqual([]); // not even an empty row
    // The username still has all its slots from elsewhere.
    const elsewhere = await Promise.all(Array.from({ length: 8 }, () => reserveSignInAttempt(username, newAddress())));
    expect(allowed(elsewhere)).toHaveLength(5);
  });

  it("refusals from a locked address racing with attempts from elsewhere cannot hide a username's attempts", async () => {
    const locked = newAddress();
    for (let i = 0; i < THROTTLE.addrMaxAttempts; i++) await reserveSignInAttempt(uniq("g"), locked);
    const username = uniq("raced");
    // Refusals from the locked address create and drop the username's empty row while the others count.
    const slots = await Promise.all(
      Array.from({ length: 200 }, (_, i) => reserveSignInAttempt(username, i % 2 ? locked : newAddress())),
    );
    expect(allowed(slots)).toHaveLength(5);
    expect(slots.filter((s, i) => i % 2 && s.allowed)).toEqual([]);
  });

  it("a success clears the username's count and gives the address its slot back", async () => {
    const username = uniq("owner");
    const address = newAddress();
    for (let i = 0; i < 4; i++) await reserveSignInAttempt(username, address);
    await reserveSignInAttempt(username, address); // the 5th: locks the username…
    expect((await rowsOf(username, address)).map((r) => [r.scope, r.attempts, r.locked])).toEqual([
      ["user", 5, true],
      ["addr", 5, false],
    ]);
    await forgiveSignInAttempt(username, address); // …and turns out to be the right password
    expect((await rowsOf(username, address)).map((r) => [r.scope, r.attempts])).toEqual([["addr", 4]]);
    expect((await reserveSignInAttempt(username, address)).allowed).toBe(true);
  });

  it("a success that took an address's last slot unlocks it again (a success is not a failure)", async () => {
    const address = newAddress();
    for (let i = 0; i < THROTTLE.addrMaxAttempts - 1; i++) await reserveSignInAttempt(uniq("g"), address);
    const owner = uniq("owner");
    expect(await reserveSignInAttempt(owner, address)).toMatchObject({ allowed: true, locks: "addr" });
    expect((await reserveSignInAttempt(uniq("g"), address)).allowed).toBe(false);
    await forgiveSignInAttempt(owner, address);
    expect(await reserveSignInAttempt(uniq("g"), address)).toMatchObject({ allowed: true, locks: "addr" });
    expect((await reserveSignInAttempt(uniq("g"), address)).allowed).toBe(false);
  });

  it("after the lock and the window have run out, the count starts afresh", async () => {
    const username = uniq("later");
    const address = newAddress();
    for (let i = 0; i < 6; i++) await reserveSignInAttempt(username, newAddress());
    expect((await reserveSignInAttempt(username, address)).allowed).toBe(false);
    await sql(
      `UPDATE sign_in_throttle SET window_started_at = now() - interval '16 minutes', locked_until = now() - interval '1 second'
       WHERE scope = 'user' AND key = $1`,
      [username],
    );
    const slots = await Promise.all(Array.from({ length: 20 }, () => reserveSignInAttempt(username, newAddress())));
    expect(allowed(slots)).toHaveLength(5);
  });
});
