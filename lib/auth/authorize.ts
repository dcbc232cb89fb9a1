/**
 * The one authorization rule, for routes (`route(handler, { allow })`) and pages (`requirePage`): a
 * caller may proceed when it holds at least one of the capabilities the route or page names.
 */
import { KeywardError } from "@/lib/errors";
import type { Principal } from "./principal";
import { hasCapability, type Capability } from "./roles";

export function isAllowed(principal: Principal, allow: readonly Capability[]): boolean {
  return allow.some((c) => hasCapability(principal.capabilities, c));
}

export function authorize(principal: Principal, allow: readonly Capability[]): void {
  if (isAllowed(principal, allow)) return;
  const needs = allow.join(" or ");
  if (principal.kind === "apikey") {
    throw KeywardError.forbidden(`this API key lacks the scope: needs one of ${allow.join(", ")}`);
  }
  if (principal.kind === "user") {
    throw KeywardError.forbidden(`your role (${principal.role}) may not do this: it needs ${describe(allow)}`);
  }
  throw KeywardError.forbidden(`not allowed: needs ${needs}`);
}

function describe(allow: readonly Capability[]): string {
  if (allow.includes("read")) return "the viewer role";
  if (allow.includes("operator")) return "the operator role";
  if (allow.includes("admin")) return "the admin role";
  return `an API key with scope ${allow.join(" or ")}`;
}
