/** GET /api/v1/replays/preflight/:id — a stored preflight with its items as classified (read); 404 when unknown. */
import { getPreflight } from "@/lib/replay/preflight";
import { preflightParams, preflightSchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params, principal }) => json(await getPreflight(params.id, principal)), {
  allow: ["read"],
  params: preflightParams,
  summary: "A stored preflight with its items as classified",
  responses: { 200: { description: "The preflight, its checks as the caller sees them", schema: preflightSchema } },
  errors: [404],
});
