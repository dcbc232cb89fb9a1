/** GET /api/v1/replays/:id — a replay's progress, counts by outcome, failures and first 500 items (read). */
import { getReplay } from "@/lib/replay/replays";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params }) => json(await getReplay(params.id)), {
  allow: ["read"],
  summary: "A replay's progress, counts by outcome, failures and first 500 items",
  errors: [404],
});
