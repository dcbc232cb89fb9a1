/**
 * POST /api/v1/dead-letters/discard — discard pending dead letters (operators), by `{ ids }` or
 * `{ filter: { source, status?, failedSince?, failedUntil?, error? } }`, with `reason` (at least 10
 * characters) and, for a filter matching more than 100, `expectedCount`: 200 { discarded, ids, skipped }.
 * 409 count_confirmation_required (details.matched); 422 naming the field. Logged as dead_letter.discard.
 */
import { discardDeadLetters } from "@/lib/deadletters/bulk";
import { discardRequest, discardResultSchema } from "@/lib/deadletters/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ body, principal }) => json(await discardDeadLetters(body, principal)), {
  allow: ["operator"],
  body: discardRequest,
  summary: "Discard pending dead letters, by ids or by filter",
  responses: { 200: { description: "{ discarded, ids, skipped }", schema: discardResultSchema } },
  errors: [409],
});
