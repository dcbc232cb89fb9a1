/**
 * GET /api/v1/api-keys — API keys (never the keys themselves). POST — create one: { name, scopes };
 * the key is in the 201 response and nowhere else, ever. Admins only.
 */
import { createApiKey, listApiKeys } from "@/lib/auth/api-keys";
import { json, readJson, route } from "@/lib/http/route";

export const GET = route(async () => json({ apiKeys: await listApiKeys() }), { allow: ["admin"] });

export const POST = route(
  async ({ req, principal }) => json(await createApiKey((await readJson(req, 4096)) as never, principal), 201),
  { allow: ["admin"] },
);
