/** DELETE /api/v1/api-keys/:id — revoke a key (by id or name); it stops working at once. Admins only. */
import { revokeApiKey } from "@/lib/auth/api-keys";
import { json, route } from "@/lib/http/route";

export const DELETE = route(
  async ({ params, principal }) => json(await revokeApiKey(params.id, principal)),
  { allow: ["admin"] },
);
