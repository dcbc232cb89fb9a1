/**
 * POST /api/v1/claims — claim one event. Callers: API keys with scope claims:write.
 * 201 claimed · 200 duplicate · 409 in_flight / payload_mismatch (see lib/claims/claim.ts).
 */
import { actorOf } from "@/lib/auth/principal";
import { claimEvent } from "@/lib/claims/claim";
import { OUTCOME_STATUS } from "@/lib/claims/schema";
import { json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => {
    const result = await claimEvent((await readJson(req)) as never, { actor: actorOf(principal) });
    return json(result, OUTCOME_STATUS[result.outcome]);
  },
  { allow: ["claims:write"] },
);
