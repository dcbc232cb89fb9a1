/**
 * GET /api/v1/overview?limit&q — live figures per source (keys alive / in flight / expired, claim outcomes of
 * the last hour), read at one database instant (`asOf`), with the metrics sampler's latest sample. Rows for
 * every source, or (`limit`) at most that many, the busiest first when more match; `q` keeps the sources whose
 * name contains it; `totals` always cover every source. Callers: scope read (operator implies it), and the
 * console's signed-in users. Response: lib/overview/schema.ts.
 */
import { getOverview } from "@/lib/overview/overview";
import { overviewQuery, overviewSchema } from "@/lib/overview/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ query }) => json(await getOverview(undefined, query)), {
  allow: ["read"],
  query: overviewQuery,
  summary: "Live figures per source, read at one database instant",
  responses: { 200: { description: "The Overview's figures", schema: overviewSchema } },
});
