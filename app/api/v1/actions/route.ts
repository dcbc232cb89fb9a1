/**
 * GET /api/v1/actions?limit&cursor&actor&action — the operator action log, newest first: `{ items, next }`,
 * `next` the cursor of the next page. Operators and admins (and API keys with scope operator).
 */
import { listActions, listActionsQuery } from "@/lib/audit/actions";
import { actionPageSchema } from "@/lib/audit/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ query }) => json(await listActions(query)), {
  allow: ["operator"],
  query: listActionsQuery,
  summary: "The operator action log, newest first",
  responses: { 200: { description: "{ items, next }", schema: actionPageSchema } },
});
