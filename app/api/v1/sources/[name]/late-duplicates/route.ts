/**
 * GET /api/v1/sources/:name/late-duplicates?window=30d&limit=50&cursor=… — events of the source processed
 * twice because their key had expired (found by lib/retention/late-duplicates.ts within ~3 minutes), newest
 * first: `{ items, next, perDay }` (viewers and up, API keys with scope read). 404 unknown source; 422 naming a bad
 * window, or a cursor that is not one.
 */
import { listLateDuplicates } from "@/lib/retention/advice";
import { lateDuplicatesPageSchema, lateDuplicatesQuery } from "@/lib/retention/advice-schema";
import { sourceParams } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params, query }) => json(await listLateDuplicates(params.name, query)), {
  allow: ["read"],
  params: sourceParams,
  query: lateDuplicatesQuery,
  summary: "Events of the source processed twice because their key had expired",
  responses: { 200: { description: "A page of late duplicates", schema: lateDuplicatesPageSchema } },
  errors: [404],
});
