/**
 * POST /api/v1/dead-letters — store one dead letter (API keys with scope deadletters:write, operators):
 * 201 { id }; 413 over 256 KiB of payload; 422 naming the field; written with its `dead_lettered` audit row.
 * GET /api/v1/dead-letters?source&from&to&errorContains&status&sort&limit&cursor — list with counts (read).
 */
import { actorOf } from "@/lib/auth/principal";
import { recordDeadLetter } from "@/lib/deadletters/intake";
import { listDeadLetters } from "@/lib/deadletters/list";
import { MAX_SINGLE_BODY_BYTES } from "@/lib/deadletters/schema";
import { json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => json(await recordDeadLetter(await readJson(req, MAX_SINGLE_BODY_BYTES), actorOf(principal)), 201),
  { allow: ["deadletters:write", "operator"] },
);

export const GET = route(
  async ({ req }) => json(await listDeadLetters(Object.fromEntries(new URL(req.url).searchParams))),
  { allow: ["read"] },
);
