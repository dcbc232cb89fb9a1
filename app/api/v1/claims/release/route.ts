/**
 * POST /api/v1/claims/release — delete a claim so the sender's retry is processed: the handler failed
 * (services, scope claims:write), or an operator frees a stuck key (operators, scope operator; without
 * claimToken). 200 · 404 unknown or expired key · 409 wrong claimToken. The release is in the audit
 * history with its actor; a person's release is also in the operator action log.
 */
import { actorOf } from "@/lib/auth/principal";
import { releaseClaim } from "@/lib/claims/settle";
import { recordAction } from "@/lib/audit/actions";
import { clientAddress, json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => {
    const result = await releaseClaim((await readJson(req)) as never, { actor: actorOf(principal) });
    if (principal.kind !== "apikey" || !principal.capabilities.includes("claims:write")) {
      await recordAction(principal, {
        action: "key.release",
        target: { type: "key", id: `${result.source}/${result.eventId}` },
        source: result.source,
        eventId: result.eventId,
        address: clientAddress(req),
      });
    }
    return json(result);
  },
  { allow: ["claims:write", "operator"] },
);
