/**
 * POST /api/v1/claims/complete — mark an in-flight claim done. Callers: scope claims:write.
 * 200 · 404 unknown or expired key · 409 wrong claimToken.
 */
import { actorOf } from "@/lib/auth/principal";
import { completeClaim } from "@/lib/claims/settle";
import { json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => json(await completeClaim((await readJson(req)) as never, { actor: actorOf(principal) })),
  { allow: ["claims:write"] },
);
