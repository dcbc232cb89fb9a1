/**
 * GET /api/v1/source-names — every source's name, by name, and nothing else (viewers and up): what the
 * Overview's chart picker lists when the overview's rows leave sources out. GET /api/v1/sources computes a
 * report per source (5.4 MB and ~0.5 s for 6,000 sources); this is one read of the names (~107 KB).
 */
import { sourceNames } from "@/lib/sources/sources";
import { sourceNamesSchema } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json({ names: await sourceNames() }), {
  allow: ["read"],
  summary: "Every source's name, by name",
  responses: { 200: { description: "{ names }", schema: sourceNamesSchema } },
});
