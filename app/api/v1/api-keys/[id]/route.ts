/**
 * DELETE /api/v1/api-keys/:id — revoke a key (by id or name). Admins only. It stops working at once on this
 * server and within 1 s on every other (lib/auth/api-key-cache.ts).
 */
import { revokeApiKey } from "@/lib/auth/api-keys";
import { apiKeySchema } from "@/lib/auth/schema";
import { json, route } from "@/lib/http/route";

export const DELETE = route(
  async ({ params, principal }) => json(await revokeApiKey(params.id, principal)),
  {
    allow: ["admin"],
    summary: "Revoke an API key (by id or name)",
    responses: { 200: { description: "The revoked key's record", schema: apiKeySchema } },
    errors: [404],
  },
);
