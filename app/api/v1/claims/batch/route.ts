/**
 * POST /api/v1/claims/batch — claim 1 to 1000 events of one source in one statement.
 * Callers: API keys with scope claims:write. 200 { results } in input order.
 */
import { actorOf } from "@/lib/auth/principal";
import { claimEvents } from "@/lib/claims/claim";
import { json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => {
    const results = await claimEvents((await readJson(req)) as never, { actor: actorOf(principal) });
    return json({ results });
  },
  { allow: ["claims:write"] },
);
