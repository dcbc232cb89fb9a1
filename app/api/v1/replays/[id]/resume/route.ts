/** POST /api/v1/replays/:id/resume — resume a replay (operators): 200 ReplaySummary; 409 when its state does not allow it. */
import { changeReplay } from "@/lib/replay/replays";
import { replayParams, replaySummarySchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, principal }) => json(await changeReplay(params.id, "resume", principal)), {
  allow: ["operator"],
  params: replayParams,
  summary: "Resume a paused replay",
  responses: { 200: { description: "The replay after the change", schema: replaySummarySchema } },
  errors: [404, 409],
});
