/**
 * Signing in and out of the console. Sign-in is throttled per username and per client address
 * (throttle.ts: each attempt is counted before its password is checked) and every attempt, successful or
 * not, is recorded in the operator action log with the reason (server-side only: the caller learns just
 * "invalid username or password").
 */
import "server-only";
import { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { database, type Db } from "@/lib/db/transaction";
import { storableRepresentation, unstorableReason } from "@/lib/http/fields";
import { recordAction } from "@/lib/audit/actions";
import { getAuth } from "./auth";
import { oidcConfig, OIDC_PROVIDER_ID } from "./oidc";
import type { Principal, UserPrincipal } from "./principal";
import { forgiveSignInAttempt, reserveSignInAttempt } from "./throttle";
import { loadEnv } from "@/lib/config/env";

export const signInRequest = z.strictObject({
  // A name PostgreSQL cannot store (NUL, a lone surrogate) names no account either: it is kept in its
  // escaped form (`\u0000`, never a valid username), so the attempt is refused, counted and recorded like
  // any unknown name instead of failing in the database.
  username: z
    .string()
    .trim()
    .toLowerCase()
    .min(1, "is required")
    .max(64, "must be at most 64 characters")
    .transform((s) => (unstorableReason(s) ? storableRepresentation(s) : s)),
  password: z.string().min(1, "is required").max(256, "must be at most 256 characters"),
});

export type SignInRequest = z.output<typeof signInRequest>;

const INVALID = () => KeywardError.unauthorized("invalid username or password");

export type SessionInfo = {
  user: { username: string; name: string; role: string; capabilities: string[] } | null;
  /** False on a fresh install: the console then shows how to create the first admin, and nothing else. */
  adminExists: boolean;
  sso: { providerId: string; name: string } | null;
};

/** SessionInfo, the answer of GET and POST /session. */
export const sessionInfoSchema = z.object({
  user: z.object({ username: z.string(), name: z.string(), role: z.string(), capabilities: z.array(z.string()) }).nullable(),
  adminExists: z.boolean(),
  sso: z.object({ providerId: z.string(), name: z.string() }).nullable(),
}) satisfies z.ZodType<SessionInfo>;

export function publicUser(p: UserPrincipal) {
  return { username: p.username, name: p.name, role: p.role, capabilities: p.capabilities };
}

export async function sessionInfo(principal: Principal | null, db: Db = database()): Promise<SessionInfo> {
  const oidc = oidcConfig(loadEnv());
  return {
    user: principal?.kind === "user" ? publicUser(principal) : null,
    adminExists: (await db.prisma.authUser.count({ where: { role: "admin", disabled: false } })) > 0,
    sso: oidc ? { providerId: OIDC_PROVIDER_ID, name: oidc.displayName } : null,
  };
}

/** Returns Better Auth's Set-Cookie headers on success; throws 401 (or 429 when locked out) otherwise. */
export async function signIn(
  { username, password }: SignInRequest,
  req: Request,
  address: string,
  db: Db = database(),
): Promise<{ headers: Headers; username: string }> {
  const target = { type: "user", id: username };
  // Counted before the password is checked, so a burst of concurrent attempts cannot outrun the lock.
  const lock = await reserveSignInAttempt(username, address);
  if (!lock.allowed) {
    await recordAction("anonymous", { action: "sign_in", outcome: "refused", reason: `locked out (${lock.scope})`, target, address });
    const minutes = Math.ceil(lock.retryAfterSeconds / 60);
    throw new KeywardError(
      429,
      "locked_out",
      `too many failed sign-ins ${lock.scope === "user" ? "for this user" : "from this address"}; try again in ${minutes} minute${minutes === 1 ? "" : "s"}`,
      { retryAfterSeconds: lock.retryAfterSeconds },
    );
  }
  const user = await db.prisma.authUser.findUnique({ where: { username }, select: { disabled: true } });
  let reason = user ? "wrong password" : "unknown user";
  if (!user || user.disabled) {
    if (user) reason = "account disabled";
    // Spend the same scrypt time as a real check, so the answer's timing does not tell which names exist.
    await burnPasswordCheck(password);
  } else {
    const auth = await getAuth();
    const res = await auth.api.signInUsername({
      body: { username, password },
      headers: req.headers,
      asResponse: true,
    });
    if (res.ok) {
      await forgiveSignInAttempt(username, address);
      await recordAction(`user:${username}`, { action: "sign_in", target, address });
      const headers = new Headers();
      for (const c of res.headers.getSetCookie()) headers.append("set-cookie", c);
      return { headers, username };
    }
    if (res.status >= 500) throw new Error(`sign-in failed with status ${res.status}`);
  }
  await recordAction("anonymous", {
    action: "sign_in",
    outcome: "failed",
    reason: lock.locks ? `${reason}; now locked out` : reason,
    target,
    address,
  });
  throw INVALID();
}

let dummyHash: Promise<string> | undefined;

async function burnPasswordCheck(password: string): Promise<void> {
  const ctx = await (await getAuth()).$context;
  dummyHash ??= ctx.password.hash(`keyward-dummy-${Date.now()}`);
  await ctx.password.verify({ hash: await dummyHash, password });
}

/** Ends the caller's session; returns the Set-Cookie headers that clear the cookie. */
export async function signOut(req: Request, principal: Principal): Promise<Headers> {
  const auth = await getAuth();
  const res = await auth.api.signOut({ headers: req.headers, asResponse: true });
  await recordAction(principal, { action: "sign_out" });
  const headers = new Headers();
  for (const c of res.headers.getSetCookie()) headers.append("set-cookie", c);
  return headers;
}
