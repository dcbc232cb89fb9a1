/**
 * Sign-in throttling, per username and per client address, kept in the database so that every process
 * agrees. An attempt is counted BEFORE its password is checked: one statement (keyward_sign_in_reserve,
 * migration 20261204040000) reserves a slot for the username and one for the address under row locks,
 * and says whether the password may be checked at all. However many requests arrive at once, at most
 * 5 passwords per username and 20 per address are checked in a 15-minute window: the attempt that takes
 * the last slot locks the username (or address) for 15 minutes there and then, whatever its outcome, and
 * attempts while locked are refused without a password check.
 *
 * A successful sign-in clears the username's count and gives its slot back to the address (a success is
 * not a failure). Locking a username is also a way for an attacker to keep its owner out for a while:
 * that is the accepted price of stopping password guessing.
 */
import "server-only";
import { z } from "zod";
import { execute, query, type PreparedSql } from "@/lib/db/sql";

export const THROTTLE = {
  userMaxAttempts: 5,
  addrMaxAttempts: 20,
  windowSeconds: 15 * 60,
  lockSeconds: 15 * 60,
};

const RESERVE_SQL: PreparedSql = {
  name: "keyward_sign_in_reserve",
  text: "SELECT allowed, lock_scope, retry_after, locks_now FROM keyward_sign_in_reserve($1, $2, $3, $4, $5, $6)",
};

const CLEAR_USER_SQL: PreparedSql = {
  name: "keyward_sign_in_clear_user",
  text: "DELETE FROM sign_in_throttle WHERE scope = 'user' AND key = $1",
};

const FORGIVE_ADDR_SQL: PreparedSql = {
  name: "keyward_sign_in_forgive_addr",
  text: `UPDATE sign_in_throttle
         SET attempts = attempts - 1, locked_until = CASE WHEN attempts - 1 < $2 THEN NULL ELSE locked_until END
         WHERE scope = 'addr' AND key = $1 AND attempts > 0`,
};

export type Scope = "user" | "addr";

/**
 * The answer for one attempt: may its password be checked? If not, which limit refused it and for how
 * long. `locks` names the limit this very attempt used up (it is then the last checked before the lock).
 */
export type AttemptSlot =
  | { allowed: true; locks: Scope | null }
  | { allowed: false; scope: Scope; retryAfterSeconds: number };

/** Counts this attempt against the username and the address (both or neither), before any password check. */
export async function reserveSignInAttempt(username: string, address: string): Promise<AttemptSlot> {
  const t = THROTTLE;
  const [row] = await query(z.object({ allowed: z.boolean(), lock_scope: z.enum(["user", "addr"]).nullable(), retry_after: z.number(), locks_now: z.boolean() }), RESERVE_SQL, [
    username,
    address,
    t.userMaxAttempts,
    t.addrMaxAttempts,
    t.windowSeconds,
    t.lockSeconds,
  ]);
  if (!row) throw new Error("keyward_sign_in_reserve returned no row");
  if (!row.allowed) return { allowed: false, scope: row.lock_scope ?? "user", retryAfterSeconds: Math.max(1, row.retry_after) };
  return { allowed: true, locks: row.locks_now ? row.lock_scope : null };
}

/** After a success: the username starts afresh, and the address gets back the slot this attempt took. */
export async function forgiveSignInAttempt(username: string, address: string): Promise<void> {
  // Two statements, the username's row first (the order keyward_sign_in_reserve locks them in).
  await execute(CLEAR_USER_SQL, [username]);
  await execute(FORGIVE_ADDR_SQL, [address, THROTTLE.addrMaxAttempts]);
}
