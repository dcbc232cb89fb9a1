/**
 * POST /api/v1/sources/:name/preview — a dry run of PATCH /api/v1/sources/:name with the same body: the
 * source as it is and as the change would leave it (TTL, invariant checks, projected size), checked by the
 * same code as a saved source. Saves nothing, records nothing. Viewers and up (the console's edit form
 * calls it as an admin types); 404 unknown source, 422 what PATCH would refuse.
 */
import { previewSourceUpdate } from "@/lib/sources/preview";
import { sourceParams, sourcePreviewSchema, updateSourceRequest } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, body }) => json(await previewSourceUpdate(params.name, body)), {
  allow: ["read"],
  params: sourceParams,
  body: updateSourceRequest,
  maxBodyBytes: 4096,
  summary: "A dry run of PATCH /api/v1/sources/{name}: the source as it is and as the change would leave it",
  responses: { 200: { description: "{ current, preview }", schema: sourcePreviewSchema } },
  errors: [404],
});
