/**
 * POST /api/v1/dead-letters/resolve — mark pending dead letters resolved (handled outside Keyward;
 * operators), by `{ ids }` or `{ filter }` as discard, `reason` optional, `expectedCount` for a filter
 * matching more than 100: 200 { resolved, ids, skipped }. Logged as dead_letter.resolve.
 */
import { resolveDeadLetters } from "@/lib/deadletters/bulk";
import { resolveRequest, resolveResultSchema } from "@/lib/deadletters/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ body, principal }) => json(await resolveDeadLetters(body, principal)), {
  allow: ["operator"],
  body: resolveRequest,
  summary: "Mark pending dead letters resolved (handled outside Keyward)",
  responses: { 200: { description: "{ resolved, ids, skipped }", schema: resolveResultSchema } },
  errors: [409],
});
