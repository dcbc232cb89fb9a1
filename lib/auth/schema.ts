/** API-key scopes and request schemas, shared by routes, CLI and tests. */
import { z } from "zod";
import { instant } from "@/lib/http/fields";

export const SCOPES = ["claims:write", "claims:read", "deadletters:write", "read", "operator", "metrics"] as const;
export const scope = z.enum(SCOPES);
export type Scope = z.infer<typeof scope>;

export const apiKeyName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/, "must be 1-64 letters, digits, space, '.', '_' or '-'");

export const createApiKeyRequest = z.strictObject({
  name: apiKeyName,
  scopes: z.array(scope).min(1, "must name at least one scope"),
});
export type NewApiKey = z.output<typeof createApiKeyRequest>;

/** Scopes that also satisfy a required scope (a writer may read what it wrote). */
export const IMPLIED_BY: Partial<Record<Scope, Scope[]>> = {
  "claims:read": ["claims:write", "read", "operator"],
  read: ["operator"],
  // Prometheus scrapes GET /metrics with a key of scope metrics; whoever may read the console may too.
  metrics: ["read", "operator"],
};

export function hasScope(granted: readonly string[], required: Scope): boolean {
  return granted.includes(required) || (IMPLIED_BY[required] ?? []).some((s) => granted.includes(s));
}

/** An API key's record as the API answers it (never the key itself, but once, on creation). */
export const apiKeySchema = z.object({
  id: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  createdAt: instant,
  lastUsedAt: instant.nullable(),
  revokedAt: instant.nullable(),
});
export const apiKeyListSchema = z.object({ apiKeys: z.array(apiKeySchema) });
export const newApiKeySchema = apiKeySchema.extend({ key: z.string() });

/**
 * POST /api/auth/sign-in/social's answer, Better Auth's own (its OpenAPI says `{ url?, redirect }`): the
 * identity provider's authorization URL to send the browser to or, for a client that signs in with an ID
 * token the provider can verify, the new session's token and user (the URL absent).
 */
export const ssoStartSchema = z.union([
  z.object({ url: z.url(), redirect: z.boolean() }),
  z.object({ redirect: z.literal(false), token: z.string(), user: z.record(z.string(), z.unknown()) }),
]);
