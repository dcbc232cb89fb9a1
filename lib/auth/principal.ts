/** Who is calling: a signed-in person, an API key, or the CLI on the database host. */
import os from "node:os";
import { roleCapabilities, type Capability, type Role } from "./roles";

export type UserPrincipal = {
  kind: "user";
  id: string;
  username: string;
  name: string;
  role: Role;
  capabilities: Capability[];
};
export type ApiKeyPrincipal = { kind: "apikey"; id: string; name: string; capabilities: string[] };
/** The CLI acts with admin rights: whoever runs it can already reach the database. */
export type CliPrincipal = { kind: "cli"; name: string; capabilities: Capability[] };

export type Principal = UserPrincipal | ApiKeyPrincipal | CliPrincipal;

/** How a principal is recorded in the audit history: `user:alice`, `apikey:<name>`, `cli:<os user>`. */
export function actorOf(p: Principal): string {
  if (p.kind === "user") return `user:${p.username}`;
  if (p.kind === "apikey") return `apikey:${p.name}`;
  return `cli:${p.name}`;
}

export function cliPrincipal(): CliPrincipal {
  let name = "unknown";
  try {
    name = os.userInfo().username;
  } catch {
    /* no passwd entry */
  }
  return { kind: "cli", name, capabilities: [...roleCapabilities("admin"), "claims:write", "deadletters:write"] };
}
