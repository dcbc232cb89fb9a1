/**
 * Console roles and API-key scopes, and what each may do. Both resolve to one set of capabilities, which
 * is what routes and pages require (`route(handler, { allow })`, `requirePage(...)`). ROLE_HELP and
 * SCOPE_HELP are the one wording of them: the Users and API keys screens show it, and docs/auth.md's
 * tables repeat it word for word (test/auth/help-texts.unit.test.ts holds them together). Client-safe.
 */
import { z } from "zod";
import { hasScope, type Scope } from "./schema";

export const ROLES = ["viewer", "operator", "admin"] as const;
export const role = z.enum(ROLES);
export type Role = z.infer<typeof role>;

/**
 * A capability is an API-key scope or `admin`, which no API key can hold: sources, users and keys are
 * managed by people (or the CLI on the database host).
 */
export type Capability = Scope | "admin";

const ROLE_SCOPES: Record<Role, Scope[]> = {
  viewer: ["read"],
  operator: ["read", "operator"],
  admin: ["read", "operator"],
};

export function roleCapabilities(r: Role): Capability[] {
  return r === "admin" ? [...ROLE_SCOPES.admin, "admin"] : [...ROLE_SCOPES[r]];
}

/** Whether a set of granted capabilities satisfies a required one (scopes imply each other as in schema.ts). */
export function hasCapability(granted: readonly string[], required: Capability): boolean {
  if (required === "admin") return granted.includes("admin");
  return hasScope(granted, required);
}

/** What each role may do, in the words the console and docs/auth.md use. */
export const ROLE_HELP: Record<Role, string> = {
  viewer: "read everything in the console: overview, sources, audit, dead letters and replays",
  operator: "what a viewer may, plus act on keys and dead letters (extend, release, prune now, replay) and read the action log",
  admin: "what an operator may, plus manage sources, users and API keys",
};

/** What each API-key scope lets a service do, in the words the console and docs/auth.md use. */
export const SCOPE_HELP: Record<Scope, string> = {
  "claims:write": "claim, complete and release events: the scope of a service that receives webhooks",
  "claims:read": "read the state of one key",
  "deadletters:write": "submit dead letters (POST /api/v1/dead-letters) from a queue's dead-letter handler; replaying them needs operator",
  read: "read everything the console shows (overview, sources, audit, dead letters and replays)",
  operator: "what read may, plus operator actions (extend, release, prune now, replay) and the action log",
  metrics: "scrape GET /metrics (Prometheus) and nothing else",
};

export const ROLE_RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };
