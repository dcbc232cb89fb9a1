/**
 * GET /api/v1/audit?source&eventId&eventIdPrefix&eventType&kind&actor&from&to&limit&cursor — search the
 * audit history, newest first, `limit` ≤ 500 (default 100): `{ items, next, range }`, `next` the cursor of
 * the next page (keyset, stable while rows arrive). `from` defaults to 30 days before `to` (to the
 * retention for an exact eventId); a range wider than KEYWARD_AUDIT_RETENTION_DAYS is a 422. Viewers and
 * up; API keys with scope read.
 */
import { auditPageSchema, auditSearchQuery } from "@/lib/audit/schema";
import { searchAudit } from "@/lib/audit/search";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ query }) => json(await searchAudit(query)), {
  allow: ["read"],
  query: auditSearchQuery,
  summary: "Search the audit history, newest first",
  responses: { 200: { description: "{ items, next, range }", schema: auditPageSchema } },
});
