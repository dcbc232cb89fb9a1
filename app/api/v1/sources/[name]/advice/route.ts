/**
 * GET /api/v1/sources/:name/advice?window=30d — the TTL advisor (viewers and up, API keys with scope
 * read): the source's observed duplicate ages and late duplicates over the window (1h to 90d, default
 * 30d), its current TTL, a recommended one with its reasons (or null, with `reason`, when the evidence is
 * too thin), and both projected sizes. 404 unknown source; 422 naming `window` for a bad window. Shape: lib/retention/advice-schema.ts.
 */
import { getAdvice } from "@/lib/retention/advice";
import { adviceQuery, adviceSchema } from "@/lib/retention/advice-schema";
import { sourceParams } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params, query }) => json(await getAdvice(params.name, query.window)), {
  allow: ["read"],
  params: sourceParams,
  query: adviceQuery,
  summary: "The TTL advisor: observed duplicate ages, late duplicates and a recommended TTL",
  responses: { 200: { description: "The advice", schema: adviceSchema } },
  errors: [404],
});
