/**
 * GET /api/v1/overview — live figures per source (keys alive / in flight / expired, claim outcomes of the
 * last hour), read at one database instant (`asOf`). Callers: scope read (operator implies it), and the
 * console's own pages without an API key. Response: lib/overview/schema.ts.
 */
import { getOverview } from "@/lib/overview/overview";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json(await getOverview()), { allow: ["read"] });
