/** GET /api/v1/replays/:id — a replay's progress, counts by outcome, failures and first 500 items (read). */
import { getReplay } from "@/lib/replay/replays";
import { replayParams, replaySchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params }) => json(await getReplay(params.id)), {
  allow: ["read"],
  params: replayParams,
  summary: "A replay's progress, counts by outcome, failures and first 500 items",
  responses: { 200: { description: "The replay: outcome once finished, health while running, counts, failures, items", schema: replaySchema } },
  errors: [404],
});
