/**
 * POST /api/v1/replays/:id/items/:deadLetterId/retry-now — an item waiting for its retry is attempted at once
 * instead of at its scheduled time (operators): 200 the item; 404 unknown replay or item; 409 not_waiting
 * (not pending after a failed attempt) or invalid_state (the replay is not running). Recorded in the action log.
 */
import { retryItemNow } from "@/lib/replay/replays";
import { replayItemParams, replayItemResultSchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, principal }) => json(await retryItemNow(params.id, params.deadLetterId, principal)), {
  allow: ["operator"],
  params: replayItemParams,
  summary: "Attempt an item waiting for its retry now",
  responses: { 200: { description: "The item, due now", schema: replayItemResultSchema } },
  errors: [404, 409],
});
