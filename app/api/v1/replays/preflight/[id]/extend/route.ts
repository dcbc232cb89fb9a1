/**
 * POST /api/v1/replays/preflight/:id/extend — extend the live keys of the preflight's alive and expiring
 * items to last the replay window (never shortens, never resurrects an expired key), recorded with counts,
 * then re-classify (operators): 200 { extended, preflight }; 409 when the preflight is stale.
 */
import { extendPreflight } from "@/lib/replay/preflight";
import { preflightParams, extendPreflightSchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, principal }) => json(await extendPreflight(params.id, principal)), {
  allow: ["operator"],
  params: preflightParams,
  summary: "Extend the preflight's live keys to last the replay window, then re-classify",
  responses: { 200: { description: "{ extended, preflight }", schema: extendPreflightSchema } },
  errors: [404, 409],
});
