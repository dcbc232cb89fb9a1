/**
 * Sign-in throttling, per username and per client address, kept in the database so that every process
 * agrees. Failures count in a sliding 15-minute window; reaching the limit locks the username (or the
 * address) out for 15 minutes, during which attempts are refused without checking the password.
 * A successful sign-in clears the username's count. Locking a username is also a way for an attacker to
 * keep its owner out for a while: that is the accepted price of stopping password guessing.
 */
import { query, type PreparedSql } from "../db/sql";

export const THROTTLE = {
  userMaxFailures: 5,
  addrMaxFailures: 20,
  windowSeconds: 15 * 60,
  lockSeconds: 15 * 60,
};

const LOCKED_SQL: PreparedSql = {
  name: "keyward_sign_in_locked",
  text: `SELECT scope, ceil(extract(epoch FROM locked_until - now()))::int AS retry_after
         FROM sign_in_throttle
         WHERE ((scope = 'user' AND key = $1) OR (scope = 'addr' AND key = $2)) AND locked_until > now()
         ORDER BY locked_until DESC LIMIT 1`,
};

const FAIL_SQL: PreparedSql = {
  name: "keyward_sign_in_failed",
  text: `INSERT INTO sign_in_throttle AS t (scope, key, failures, window_started_at, locked_until)
         VALUES ($1, $2, 1, now(), CASE WHEN $3::int <= 1 THEN now() + make_interval(secs => $5) END)
         ON CONFLICT (scope, key) DO UPDATE SET
           failures = CASE WHEN t.window_started_at < now() - make_interval(secs => $4) THEN 1 ELSE t.failures + 1 END,
           window_started_at = CASE WHEN t.window_started_at < now() - make_interval(secs => $4) THEN now() ELSE t.window_started_at END,
           locked_until = CASE
             WHEN (CASE WHEN t.window_started_at < now() - make_interval(secs => $4) THEN 1 ELSE t.failures + 1 END) >= $3
             THEN now() + make_interval(secs => $5)
             ELSE t.locked_until END
         RETURNING failures, locked_until > now() AS locked`,
};

export type Lock = { scope: "user" | "addr"; retryAfterSeconds: number };

/** The lock in force for this username or address, if any. */
export async function signInLock(username: string, address: string): Promise<Lock | null> {
  const [row] = await query<{ scope: "user" | "addr"; retry_after: number }>(LOCKED_SQL, [username, address]);
  return row ? { scope: row.scope, retryAfterSeconds: Math.max(1, row.retry_after) } : null;
}

/** Counts a failure against both; returns whether either is now locked. */
export async function recordSignInFailure(username: string, address: string): Promise<boolean> {
  const t = THROTTLE;
  const [user] = await query<{ locked: boolean }>(FAIL_SQL, ["user", username, t.userMaxFailures, t.windowSeconds, t.lockSeconds]);
  const [addr] = await query<{ locked: boolean }>(FAIL_SQL, ["addr", address, t.addrMaxFailures, t.windowSeconds, t.lockSeconds]);
  return Boolean(user?.locked || addr?.locked);
}

export async function clearSignInFailures(username: string): Promise<void> {
  await query("DELETE FROM sign_in_throttle WHERE scope = 'user' AND key = $1", [username]);
}
