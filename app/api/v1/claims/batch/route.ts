/**
 * POST /api/v1/claims/batch — claim 1 to 1000 events of one source in one statement.
 * Callers: API keys with scope claims:write. 200 { results } in input order.
 */
import { claimEvents } from "@/lib/claims/claim";
import { json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => {
    const results = await claimEvents((await readJson(req)) as never, { actor: `apikey:${principal.name}` });
    return json({ results });
  },
  { scopes: ["claims:write"] },
);
