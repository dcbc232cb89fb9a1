/**
 * GET /api/v1/audit?source&eventId&eventIdPrefix&eventType&kind&actor&from&to&limit&cursor — search the
 * audit history, newest first, `limit` ≤ 500 (default 100), with a `next` cursor (keyset, stable while
 * rows arrive). `from` defaults to 30 days before `to` (to the retention for an exact eventId); a range
 * wider than KEYWARD_AUDIT_RETENTION_DAYS is a 422. Viewers and up; API keys with scope read.
 */
import { auditSearchQuery } from "@/lib/audit/schema";
import { searchAudit } from "@/lib/audit/search";
import { parseOrThrow } from "@/lib/http/validate";
import { json, route } from "@/lib/http/route";

export const GET = route(
  async ({ req }) => {
    const q = parseOrThrow(auditSearchQuery, Object.fromEntries(new URL(req.url).searchParams));
    return json(await searchAudit(q));
  },
  { allow: ["read"] },
);
