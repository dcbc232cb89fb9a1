/**
 * GET /api/v1/api-keys — API keys (never the keys themselves). POST — create one: { name, scopes };
 * the key is in the 201 response and nowhere else, ever. Admins only.
 */
import { createApiKey, listApiKeys } from "@/lib/auth/api-keys";
import { apiKeyListSchema, createApiKeyRequest, newApiKeySchema } from "@/lib/auth/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json({ apiKeys: await listApiKeys() }), {
  allow: ["admin"],
  summary: "List API keys (never the keys themselves)",
  responses: { 200: { description: "{ apiKeys }", schema: apiKeyListSchema } },
});

export const POST = route(async ({ body, principal }) => json(await createApiKey(body, principal), 201), {
  allow: ["admin"],
  body: createApiKeyRequest,
  maxBodyBytes: 4096,
  summary: "Create an API key; the key is in this answer and nowhere else, ever",
  responses: { 201: { description: "The new key's record and the key itself", schema: newApiKeySchema } },
  errors: [409],
});
