/**
 * PATCH /api/v1/users/:username — { role?, disabled? }. The user's sessions end; the last active admin
 * cannot be demoted or disabled (409). Admins only.
 */
import { updateUser } from "@/lib/auth/users";
import { json, readJson, route } from "@/lib/http/route";

export const PATCH = route<{ username: string }>(
  async ({ req, params, principal }) => json({ user: await updateUser(params.username, await readJson(req, 4096), principal) }),
  { allow: ["admin"] },
);
