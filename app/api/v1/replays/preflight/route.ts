/**
 * POST /api/v1/replays/preflight — classify a source's pending dead letters (by id, or by filter; an empty
 * filter takes them all) for a replay, and store the result for 15 minutes (operators): 201 Preflight.
 */
import { createPreflight } from "@/lib/replay/preflight";
import { preflightRequest, preflightSchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ body, principal }) => json(await createPreflight(body, principal), 201), {
  allow: ["operator"],
  body: preflightRequest,
  summary: "Classify a source's pending dead letters for a replay (kept 15 minutes)",
  responses: { 201: { description: "The preflight: counts and items by category, and the readiness checks", schema: preflightSchema } },
  errors: [404],
});
