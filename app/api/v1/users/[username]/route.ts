/**
 * PATCH /api/v1/users/:username — { role?, disabled? }. The user's sessions end; the last active admin
 * cannot be demoted or disabled (409). Admins only.
 */
import { updatedUserSchema, updateUser, updateUserRequest, userParams } from "@/lib/auth/users";
import { json, route } from "@/lib/http/route";

export const PATCH = route(async ({ params, body, principal }) => json({ user: await updateUser(params.username, body, principal) }), {
  allow: ["admin"],
  params: userParams,
  body: updateUserRequest,
  maxBodyBytes: 4096,
  summary: "Change a user's role or disabled flag (their sessions end)",
  responses: { 200: { description: "{ user }", schema: updatedUserSchema } },
  errors: [404, 409],
});
