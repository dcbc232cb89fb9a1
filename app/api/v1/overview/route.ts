/**
 * GET /api/v1/overview — live figures per source (keys alive / in flight / expired, claim outcomes of the
 * last hour), read at one database instant (`asOf`), with the metrics sampler's latest sample. Callers:
 * scope read (operator implies it), and the console's signed-in users. Response: lib/overview/schema.ts.
 */
import { getOverview } from "@/lib/overview/overview";
import { overviewSchema } from "@/lib/overview/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json(await getOverview()), {
  allow: ["read"],
  summary: "Live figures per source, read at one database instant",
  responses: { 200: { description: "The Overview's figures", schema: overviewSchema } },
});
