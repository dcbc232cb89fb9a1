/**
 * GET /api/v1/sources — every source with its TTL parts, preset, dead-letter retention, invariant checks
 * and projected steady-state size (viewers and up). POST — create one (admins): `{ name, preset? ,
 * retryWindowSeconds?, queueLagSeconds?, clockSkewSeconds?, replaySeconds?, deadLetterRetentionSeconds? }`
 * (the four parts, or a preset; parts given with a preset override it).
 */
import { createSource, sourceReports } from "@/lib/sources/sources";
import { createSourceRequest, sourceInfoSchema, sourceListSchema } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json({ sources: await sourceReports() }), {
  allow: ["read"],
  summary: "Every source with its TTL parts, checks and projected size",
  responses: { 200: { description: "{ sources }", schema: sourceListSchema } },
});

export const POST = route(async ({ body, principal }) => json(await createSource(body, principal), 201), {
  allow: ["admin"],
  body: createSourceRequest,
  maxBodyBytes: 4096,
  summary: "Create a source",
  responses: { 201: { description: "The source", schema: sourceInfoSchema } },
  errors: [409],
});
