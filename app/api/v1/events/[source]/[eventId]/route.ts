/**
 * GET /api/v1/events/{source}/{eventId} — "did we process this event, and when?": the dedup key's state
 * now (alive until T, expired, or pruned at T per the audit history, released, never seen), its status,
 * duplicate count, first and last seen, and the full audit timeline (oldest first). Works long after the
 * key was pruned. Viewers and up; API keys with scope read.
 */
import { getEventAnswer } from "@/lib/audit/event";
import { eventAnswerSchema, eventParams } from "@/lib/audit/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params }) => json(await getEventAnswer(params)), {
  allow: ["read"],
  params: eventParams,
  summary: "Did we process this event, and when: the key's state now and its audit timeline",
  responses: { 200: { description: "The key's fate, the explanation and the audit timeline", schema: eventAnswerSchema } },
});
