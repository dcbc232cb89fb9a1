/**
 * GET /api/v1/users — console users. POST — create one: { username, role, password? }; a generated
 * password is returned once (201). Admins only.
 */
import { createUser, listUsers } from "@/lib/auth/users";
import { json, readJson, route } from "@/lib/http/route";

export const GET = route(async () => json({ users: await listUsers() }), { allow: ["admin"] });

export const POST = route(
  async ({ req, principal }) => {
    const r = await createUser((await readJson(req, 4096)) as never, principal);
    return json({ user: r.user, ...(r.generated ? { password: r.password } : {}) }, 201);
  },
  { allow: ["admin"] },
);
