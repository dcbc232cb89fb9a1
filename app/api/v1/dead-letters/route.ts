/**
 * POST /api/v1/dead-letters — store one dead letter (API keys with scope deadletters:write, operators):
 * 201 { id }; 413 over 256 KiB of payload; 422 naming the field (a payload nested over 64 levels is
 * payload_too_deep); written with its `dead_lettered` audit row. The payload is kept as the bytes sent
 * (the `payload` value's JSON text, or the decoded `payloadBase64` with its `contentType`).
 * GET /api/v1/dead-letters?source&from&to&errorContains&status&sort&limit&cursor — list with counts (read).
 */
import { actorOf } from "@/lib/auth/principal";
import { recordDeadLetterBody } from "@/lib/deadletters/intake";
import { listDeadLetters } from "@/lib/deadletters/list";
import { MAX_SINGLE_BODY_BYTES } from "@/lib/deadletters/schema";
import { json, readJsonBody, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => json(await recordDeadLetterBody(await readJsonBody(req, MAX_SINGLE_BODY_BYTES), actorOf(principal)), 201),
  { allow: ["deadletters:write", "operator"] },
);

export const GET = route(
  async ({ req }) => json(await listDeadLetters(Object.fromEntries(new URL(req.url).searchParams))),
  { allow: ["read"] },
);
