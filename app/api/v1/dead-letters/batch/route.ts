/**
 * POST /api/v1/dead-letters/batch — store up to 500 dead letters in one statement (API keys with scope
 * deadletters:write, operators): 200 { results: [{ id } | { error }] } in input order; a bad item does not
 * fail the others (an oversize or too deeply nested payload is that item's own error); a body that is not
 * { items: [...] } is a 422; a body over 16 MiB a 413.
 */
import { actorOf } from "@/lib/auth/principal";
import { recordDeadLettersBody } from "@/lib/deadletters/intake";
import { MAX_BATCH_BODY_BYTES } from "@/lib/deadletters/schema";
import { json, readJsonBody, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => json({ results: await recordDeadLettersBody(await readJsonBody(req, MAX_BATCH_BODY_BYTES), actorOf(principal)) }),
  { allow: ["deadletters:write", "operator"] },
);
