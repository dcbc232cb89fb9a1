/**
 * POST /api/v1/replays — start a replay from a preflight (operators; header Idempotency-Key required):
 * 202 { replayId, total }; the same key and body again → 202 with the same replayId; the same key with
 * another body → 422 idempotency_key_reused; 409 preflight_stale / extension_required; 422 force_required
 * (expired_processed without force.reason) / in_flight_not_replayable.
 * GET /api/v1/replays?source&status&state&outcome&limit&cursor — replays, newest first, `{ items, next }` (read);
 * state running|finished, outcome succeeded|partial|failed|cancelled (422 for any other value).
 */
import { listReplays, startReplay } from "@/lib/replay/replays";
import { listReplaysQuery, replayListSchema, startReplayHeaders, startReplayRequest, replayStartedSchema } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(
  async ({ headers, body, principal }) => {
    const started = await startReplay(body, headers["idempotency-key"], principal);
    return json({ replayId: started.replayId, total: started.total }, 202);
  },
  {
    allow: ["operator"],
    headers: startReplayHeaders,
    body: startReplayRequest,
    summary: "Start a replay from a preflight (header Idempotency-Key required)",
    responses: {
      202: { description: "{ replayId, total }; the same key and body again answer the same replayId", schema: replayStartedSchema },
    },
    errors: [404, 409],
  },
);

export const GET = route(async ({ query }) => json(await listReplays(query)), {
  allow: ["read"],
  query: listReplaysQuery,
  summary: "List replays, newest first (filtered by source, status, state running|finished, outcome succeeded|partial|failed|cancelled)",
  responses: { 200: { description: "{ items, next }: each replay with its outcome (finished) or health (running)", schema: replayListSchema } },
});
