/** POST /api/v1/replays/:id/cancel — cancel a replay (operators): 200 ReplaySummary; 409 when its state does not allow it. */
import { changeReplay } from "@/lib/replay/replays";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, principal }) => json(await changeReplay(params.id, "cancel", principal)), {
  allow: ["operator"],
  summary: "Cancel a replay",
  errors: [404, 409],
});
