/**
 * POST /api/v1/replays — start a replay from a preflight (operators; header Idempotency-Key required):
 * 202 { replayId, total }; the same key and body again → 202 with the same replayId; the same key with
 * another body → 422 idempotency_key_reused; 409 preflight_stale / extension_required; 422 force_required
 * (expired_processed without force.reason) / in_flight_not_replayable.
 * GET /api/v1/replays?source&status&limit&cursor — replays, newest first (read).
 */
import { listReplays, startReplay } from "@/lib/replay/replays";
import { json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => {
    const started = await startReplay(await readJson(req), req.headers.get("idempotency-key"), principal);
    return json({ replayId: started.replayId, total: started.total }, 202);
  },
  { allow: ["operator"] },
);

export const GET = route(async ({ req }) => json(await listReplays(Object.fromEntries(new URL(req.url).searchParams))), {
  allow: ["read"],
});
