/**
 * Console roles and what each may do. Roles and API-key scopes resolve to one set of capabilities, which
 * is what routes and pages require (`route(handler, { allow })`, `requirePage(...)`).
 *
 *   viewer    read everything in the console
 *   operator  + actions on keys and dead letters (extend, release, prune now, replay)
 *   admin     + sources, users and API keys
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

export const ROLE_RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };
