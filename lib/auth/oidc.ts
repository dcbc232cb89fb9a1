/**
 * Optional single sign-on through OpenID Connect, on when KEYWARD_OIDC_ISSUER, _CLIENT_ID and
 * _CLIENT_SECRET are set. The provider is discovered from `<issuer>/.well-known/openid-configuration`;
 * the flow is the authorization-code flow with PKCE, state and nonce, and ID tokens verified against the
 * issuer's JWKS (Better Auth's generic OAuth plugin).
 *
 * Roles: the claim named by KEYWARD_OIDC_ROLE_CLAIM (a string or a list of strings; the highest of
 * viewer / operator / admin found wins), or else the allow-lists KEYWARD_OIDC_ADMINS / _OPERATORS /
 * _VIEWERS (comma-separated emails), read from the ID token's claims. An identity that maps to no role
 * signs in to nothing: it gets no access. The role is re-read at every sign-in (applyOidcRole, called by
 * the callback route before it answers), so removing someone upstream takes effect at their next one.
 * Better Auth does not store a mapped profile's extra fields, hence this step of our own.
 *
 * The provider's tokens: Keyward never calls the provider's APIs, so the access and refresh tokens are not
 * kept (sealOidcTokens, a hook on every write of an account row, drops them before Better Auth stores it);
 * the ID token, whose claims decide the role, is kept encrypted like the other secrets (AES-256-GCM under a
 * key derived from the auth secret, lib/sources/signing-secret.ts).
 */
import "server-only";
import type { GenericOAuthConfig } from "better-auth/plugins/generic-oauth";
import { decodeJwt } from "jose";
import { database, type Db } from "@/lib/db/transaction";
import { decryptSecret, encryptSecret } from "@/lib/sources/signing-secret";
import type { KeywardEnv } from "@/lib/config/env";
import { ROLES, ROLE_RANK, type Role } from "./roles";

export const OIDC_PROVIDER_ID = "oidc";
/** Stored for an SSO identity that maps to no role; it grants nothing. */
export const NO_ROLE = "none";

export type OidcConfig = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  displayName: string;
  roleClaim?: string;
  allow: Record<Role, Set<string>>;
};

const list = (value: string | undefined) =>
  new Set((value ?? "").split(",").map((s) => s.trim().toLowerCase()).filter(Boolean));

export function oidcConfig(env: KeywardEnv): OidcConfig | null {
  if (!env.KEYWARD_OIDC_ISSUER || !env.KEYWARD_OIDC_CLIENT_ID || !env.KEYWARD_OIDC_CLIENT_SECRET) return null;
  return {
    issuer: env.KEYWARD_OIDC_ISSUER.replace(/\/+$/, ""),
    clientId: env.KEYWARD_OIDC_CLIENT_ID,
    clientSecret: env.KEYWARD_OIDC_CLIENT_SECRET,
    displayName: env.KEYWARD_OIDC_NAME,
    roleClaim: env.KEYWARD_OIDC_ROLE_CLAIM,
    allow: {
      admin: list(env.KEYWARD_OIDC_ADMINS),
      operator: list(env.KEYWARD_OIDC_OPERATORS),
      viewer: list(env.KEYWARD_OIDC_VIEWERS),
    },
  };
}

/** The role an identity provider's profile maps to, or null for none. */
export function mapOidcRole(config: OidcConfig, profile: Record<string, unknown>): Role | null {
  let best: Role | null = null;
  const consider = (r: Role) => {
    if (!best || ROLE_RANK[r] > ROLE_RANK[best]) best = r;
  };
  if (config.roleClaim) {
    const raw = profile[config.roleClaim];
    const values = Array.isArray(raw) ? raw : raw == null ? [] : [raw];
    for (const v of values) {
      const s = String(v).toLowerCase();
      if ((ROLES as readonly string[]).includes(s)) consider(s as Role);
    }
  }
  const email = typeof profile.email === "string" ? profile.email.toLowerCase() : "";
  if (email && profile.email_verified !== false) {
    for (const r of ROLES) if (config.allow[r].has(email)) consider(r);
  }
  return best;
}

export function oidcPlugin(config: OidcConfig): GenericOAuthConfig {
  return {
    providerId: OIDC_PROVIDER_ID,
    name: config.displayName,
    discoveryUrl: `${config.issuer}/.well-known/openid-configuration`,
    requireIdTokenVerification: true,
    clientId: config.clientId,
    clientSecret: config.clientSecret,
    scopes: ["openid", "email", "profile"],
    pkce: true,
    overrideUserInfo: true,
    mapProfileToUser: (profile) => {
      const email = typeof profile.email === "string" ? profile.email.toLowerCase() : "";
      return {
        name: String(profile.name ?? profile.preferred_username ?? (email || profile.sub)),
        email: email || `${String(profile.sub)}@sso.keyward.invalid`,
      };
    },
  };
}

/**
 * Sets the role of a user who just signed in through SSO from the claims of the ID token Better Auth
 * verified and stored for this sign-in. Returns the role, or NO_ROLE (no access) when nothing maps.
 */
export async function applyOidcRole(config: OidcConfig, userId: string, secret: string, db: Db = database()): Promise<Role | typeof NO_ROLE> {
  const account = await db.prisma.authAccount.findFirst({
    where: { userId, providerId: OIDC_PROVIDER_ID },
    orderBy: { updatedAt: "desc" },
    select: { idToken: true },
  });
  let claims: Record<string, unknown> = {};
  try {
    const idToken = account?.idToken ? decryptSecret(account.idToken, secret) : null;
    if (idToken) claims = decodeJwt(idToken);
  } catch {
    claims = {};
  }
  const role = mapOidcRole(config, claims) ?? NO_ROLE;
  await db.prisma.authUser.update({ where: { id: userId }, data: { role } });
  return role;
}

type AccountTokens = { accessToken?: string | null; refreshToken?: string | null; idToken?: string | null };

/**
 * An account row as it may be stored: without the provider's access and refresh tokens, with the ID token
 * encrypted. Applied to every create and update of an account (Better Auth's database hooks): a field the
 * write does not set stays unset.
 */
export function sealOidcTokens<T extends AccountTokens>(account: T, secret: string): T {
  const sealed: T = { ...account };
  if ("accessToken" in account) sealed.accessToken = null;
  if ("refreshToken" in account) sealed.refreshToken = null;
  if (account.idToken) sealed.idToken = encryptSecret(account.idToken, secret);
  return sealed;
}
