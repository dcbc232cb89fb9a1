/**
 * POST /api/v1/dead-letters/batch — store up to 500 dead letters in one statement (API keys with scope
 * deadletters:write, operators): 200 { results: [{ id } | { error }] } in input order; a bad item does not
 * fail the others (an oversize or too deeply nested payload is that item's own error); a body that is not
 * { items: [...] } is a 422; a body over 16 MiB a 413.
 */
import { actorOf } from "@/lib/auth/principal";
import { recordDeadLetters } from "@/lib/deadletters/intake";
import { batchResultSchema, deadLetterBatch, MAX_BATCH_BODY_BYTES } from "@/lib/deadletters/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(
  async ({ body, bodyBytes, principal }) => json({ results: await recordDeadLetters(body, actorOf(principal), bodyBytes) }),
  {
    allow: ["deadletters:write", "operator"],
    body: deadLetterBatch,
    keepBodyBytes: true,
    maxBodyBytes: MAX_BATCH_BODY_BYTES,
    summary: "Store up to 500 dead letters in one statement",
    responses: { 200: { description: "{ results: [{ id } | { error }] } in input order: a bad item does not fail the others", schema: batchResultSchema } },
  },
);
