/**
 * GET /api/v1/users — console users. POST — create one: { username, role, password? }; a generated
 * password is returned once (201). Admins only.
 */
import { createdUserSchema, createUser, createUserRequest, listUsers, userListSchema } from "@/lib/auth/users";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json({ users: await listUsers() }), {
  allow: ["admin"],
  summary: "Console users",
  responses: { 200: { description: "{ users }", schema: userListSchema } },
});

export const POST = route(
  async ({ body, principal }) => {
    const r = await createUser(body, principal);
    return json({ user: r.user, ...(r.generated ? { password: r.password } : {}) }, 201);
  },
  {
    allow: ["admin"],
    body: createUserRequest,
    maxBodyBytes: 4096,
    summary: "Create a console user (a generated password is returned once)",
    responses: { 201: { description: "{ user, password? }", schema: createdUserSchema } },
    errors: [409],
  },
);
