import { ROLES, type Role } from "@/lib/auth/roles";

/** What each role may do, in the words the console shows next to the role picker. */
export const ROLE_HELP: Record<Role, string> = {
  viewer: "reads everything in the console",
  operator: "viewer, plus actions on keys and dead letters and the action log",
  admin: "operator, plus sources, users and API keys",
};

export { ROLES };
