/**
 * POST /api/v1/replays/:id/retry-failed — a new preflight of a finished replay's failed (and
 * skipped_unsafe) items still pending (operators, as for starting a replay): 201 Preflight, with `retryOf`;
 * confirm it with POST /api/v1/replays as any preflight. 404 unknown replay; 409 replay_not_finished
 * (running or paused) or nothing_to_retry.
 */
import { retryFailed } from "@/lib/replay/retry-failed";
import { replayParams, preflightSchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, principal }) => json(await retryFailed(params.id, principal), 201), {
  allow: ["operator"],
  params: replayParams,
  summary: "A new preflight of a finished replay's failed items still pending",
  responses: { 201: { description: "The preflight, with retryOf", schema: preflightSchema } },
  errors: [404, 409],
});
