/**
 * POST /api/v1/dead-letters — store one dead letter (API keys with scope deadletters:write, operators):
 * 201 { id }; 413 over 256 KiB of payload; 422 naming the field (a payload nested over 64 levels is
 * payload_too_deep); written with its `dead_lettered` audit row. The payload is kept as the bytes sent
 * (the `payload` value's JSON text, or the decoded `payloadBase64` with its `contentType`).
 * GET /api/v1/dead-letters?source&from&to&errorContains&status&sort&limit&cursor — list with counts,
 * `{ items, next, counts }` (read).
 */
import { actorOf } from "@/lib/auth/principal";
import { recordDeadLetter } from "@/lib/deadletters/intake";
import { listDeadLetters } from "@/lib/deadletters/list";
import {
  deadLetterInput,
  deadLetterListSchema,
  listDeadLettersQuery,
  MAX_SINGLE_BODY_BYTES,
  recordedDeadLetterSchema,
} from "@/lib/deadletters/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(
  async ({ body, bodyBytes, principal }) => json(await recordDeadLetter(body, actorOf(principal), bodyBytes), 201),
  {
    allow: ["deadletters:write", "operator"],
    body: deadLetterInput,
    keepBodyBytes: true,
    maxBodyBytes: MAX_SINGLE_BODY_BYTES,
    summary: "Store one dead letter",
    responses: { 201: { description: "{ id }", schema: recordedDeadLetterSchema } },
  },
);

export const GET = route(async ({ query }) => json(await listDeadLetters(query)), {
  allow: ["read"],
  query: listDeadLettersQuery,
  summary: "List dead letters with counts",
  responses: { 200: { description: "{ items, next, counts }", schema: deadLetterListSchema } },
});
