/**
 * GET /api/v1/dead-letters/:id/attempts?limit&cursor — the letter's replay attempts, newest first (read):
 * { items: [{ id, replayId, attempt, at, destination, status, latencyMs, responseBody, error, outcome }], next }.
 * 404 when the letter is unknown.
 */
import { listAttempts } from "@/lib/replay/attempt-list";
import { json, route } from "@/lib/http/route";

export const GET = route<{ id: string }>(
  async ({ req, params }) => json(await listAttempts(params.id, Object.fromEntries(new URL(req.url).searchParams))),
  { allow: ["read"] },
);
