/**
 * GET /api/v1/dead-letters/:id/attempts?limit&cursor — the letter's replay attempts, newest first (read):
 * { items: [{ id, replayId, attempt, at, destination, status, latencyMs, responseBody, error, outcome }], next }.
 * 404 when the letter is unknown; 422 naming a bad limit or cursor.
 */
import { listAttempts } from "@/lib/replay/attempt-list";
import { attemptPageSchema, listAttemptsQuery } from "@/lib/replay/schema";
import { json, route } from "@/lib/http/route";
import { deadLetterParams } from "@/lib/deadletters/schema";

export const GET = route(async ({ params, query }) => json(await listAttempts(params.id, query)), {
  allow: ["read"],
  params: deadLetterParams,
  query: listAttemptsQuery,
  summary: "A dead letter's replay attempts, newest first",
  responses: { 200: { description: "{ items, next }", schema: attemptPageSchema } },
  errors: [404],
});
