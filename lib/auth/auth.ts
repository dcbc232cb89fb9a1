/**
 * Console identities through Better Auth: local accounts (username + password, hashed with scrypt, a
 * memory-hard function), database sessions in an HTTP-only SameSite=Lax cookie, and optional OpenID
 * Connect single sign-on. Why Better Auth rather than Auth.js: see docs/auth.md.
 *
 * Better Auth's own HTTP endpoints are not exposed wholesale: Keyward's routes call `auth.api.*`
 * server-side (sign-in, sign-out, session), and only the OIDC redirect endpoints are forwarded to its
 * handler (app/api/auth/[...all]). Sign-up is disabled: accounts are created by an admin. The session
 * table keeps only a hash of each session token (session-tokens.ts wraps Better Auth's adapter).
 */
import "server-only";
import { z } from "zod";
import { randomBytes } from "node:crypto";
import type { betterAuth as BetterAuth, BetterAuthOptions } from "better-auth";
import type { getAdapter as GetAdapter } from "better-auth/db/adapter";
import type { username as Username } from "better-auth/plugins/username";
import type { genericOAuth as GenericOAuth } from "better-auth/plugins/generic-oauth";
import { loadEnv } from "@/lib/config/env";
import { pool } from "@/lib/db/client";
import { query } from "@/lib/db/sql";
import { processGlobal } from "@/lib/process-global";
import { logAuth } from "./auth-log";
import { oidcConfig, oidcPlugin, sealOidcTokens } from "./oidc";
import { hashSessionTokens } from "./session-tokens";

export const SESSION_COOKIE_PREFIX = "keyward";
/** A session lives 12 hours and is extended while used (at most once an hour). */
export const SESSION_TTL_SECONDS = 12 * 60 * 60;

/** Better Auth's modules, loaded on first use: CLI commands that never touch sign-in do not pay for them. */
type Modules = {
  betterAuth: typeof BetterAuth;
  username: typeof Username;
  genericOAuth: typeof GenericOAuth;
  getAdapter: typeof GetAdapter;
};

async function loadModules(): Promise<Modules> {
  const [core, user, oauth, adapter] = await Promise.all([
    import("better-auth"),
    import("better-auth/plugins/username"),
    import("better-auth/plugins/generic-oauth"),
    import("better-auth/db/adapter"),
  ]);
  return { betterAuth: core.betterAuth, username: user.username, genericOAuth: oauth.genericOAuth, getAdapter: adapter.getAdapter };
}

async function buildAuth(secret: string, modules: Modules) {
  const options = authOptions(secret, modules);
  // Better Auth's own adapter for our pool (the one it would build from `database: pool()`), wrapped so
  // that session tokens are stored hashed (session-tokens.ts).
  const adapter = hashSessionTokens(await modules.getAdapter({ ...options, database: pool() }));
  return modules.betterAuth({ ...options, database: () => adapter });
}

function authOptions(secret: string, { username, genericOAuth }: Modules) {
  const env = loadEnv();
  const baseURL = env.KEYWARD_PUBLIC_URL ?? `http://${env.HOSTNAME}:${env.PORT}`;
  const oidc = oidcConfig(env);
  return {
    appName: "Keyward",
    baseURL,
    basePath: "/api/auth",
    secret,
    telemetry: { enabled: false },
    logger: { level: "error" as const, log: logAuth },
    emailAndPassword: { enabled: true, disableSignUp: true, minPasswordLength: 12, maxPasswordLength: 256 },
    session: {
      modelName: "auth_sessions",
      expiresIn: SESSION_TTL_SECONDS,
      updateAge: 60 * 60,
      fields: {
        expiresAt: "expires_at",
        createdAt: "created_at",
        updatedAt: "updated_at",
        ipAddress: "ip_address",
        userAgent: "user_agent",
        userId: "user_id",
      },
    },
    user: {
      modelName: "auth_users",
      fields: { emailVerified: "email_verified", createdAt: "created_at", updatedAt: "updated_at" },
      additionalFields: {
        // Local accounts are created with an explicit role (users.ts); an account Better Auth creates (a
        // first SSO sign-in) starts with none, and oidc.ts sets the mapped role before the sign-in answers.
        role: { type: "string", required: true, defaultValue: "none", input: false },
        disabled: { type: "boolean", required: true, defaultValue: false, input: false },
      },
    },
    account: {
      modelName: "auth_accounts",
      fields: {
        accountId: "account_id",
        providerId: "provider_id",
        userId: "user_id",
        accessToken: "access_token",
        refreshToken: "refresh_token",
        idToken: "id_token",
        accessTokenExpiresAt: "access_token_expires_at",
        refreshTokenExpiresAt: "refresh_token_expires_at",
        createdAt: "created_at",
        updatedAt: "updated_at",
      },
      accountLinking: { enabled: false },
    },
    // The provider's tokens are not kept as sent (oidc.ts): access and refresh tokens dropped, the ID token encrypted.
    databaseHooks: {
      account: {
        create: { before: async (account) => ({ data: sealOidcTokens(account, secret) }) },
        update: { before: async (account) => ({ data: sealOidcTokens(account, secret) }) },
      },
    },
    verification: {
      modelName: "auth_verifications",
      fields: { expiresAt: "expires_at", createdAt: "created_at", updatedAt: "updated_at" },
    },
    // Keyward limits sign-in itself (per user and per address, with lock-out: throttle.ts), in the database
    // so that every process sees the same counts.
    rateLimit: { enabled: false },
    advanced: {
      cookiePrefix: SESSION_COOKIE_PREFIX,
      useSecureCookies: baseURL.startsWith("https://"),
      defaultCookieAttributes: { httpOnly: true, sameSite: "lax", path: "/" },
      // The server sets x-keyward-client-ip from the socket (or a trusted proxy), replacing any client value.
      ipAddress: { ipAddressHeaders: ["x-keyward-client-ip"] },
      database: { generateId: () => randomBytes(12).toString("base64url") },
    },
    plugins: [
      username({
        minUsernameLength: 2,
        maxUsernameLength: 64,
        usernameValidator: (name) => /^[a-z0-9][a-z0-9._-]*$/.test(name),
        schema: { user: { fields: { displayUsername: "display_username" } } },
      }),
      ...(oidc ? [genericOAuth({ config: [oidcPlugin(oidc)] })] : []),
    ],
  } satisfies BetterAuthOptions;
}

export type Auth = Awaited<ReturnType<typeof buildAuth>>;

const authSlot = processGlobal("auth", () => ({ current: undefined as Promise<Auth> | undefined }));

/** The one Better Auth instance (its signing secret is read from the environment or the database first). */
export function getAuth(): Promise<Auth> {
  if (!authSlot.current) {
    const auth = Promise.all([authSecret(), loadModules()]).then(([secret, modules]) => buildAuth(secret, modules));
    authSlot.current = auth;
    auth.catch(() => {
      if (authSlot.current === auth) authSlot.current = undefined;
    });
  }
  return authSlot.current;
}

/**
 * The secret that signs session cookies: KEYWARD_AUTH_SECRET, or one generated at the first start and
 * kept in the settings table, so every process on the same database agrees and restarts keep sessions.
 */
export async function authSecret(): Promise<string> {
  const fromEnv = loadEnv().KEYWARD_AUTH_SECRET;
  if (fromEnv) return fromEnv;
  // Two processes starting at once on a fresh database: the loser's statement may not see the winner's
  // row yet (its snapshot predates the commit), so it asks again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const [row] = await query(
      z.object({ value: z.string() }),
      `WITH ins AS (INSERT INTO settings (key, value) VALUES ('auth_secret', $1) ON CONFLICT (key) DO NOTHING RETURNING value)
       SELECT value FROM ins UNION ALL SELECT value FROM settings WHERE key = 'auth_secret' LIMIT 1`,
      [randomBytes(32).toString("base64url")],
    );
    if (row) return row.value;
  }
  throw new Error("could not read or create the session-signing secret");
}
