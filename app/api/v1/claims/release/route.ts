/**
 * POST /api/v1/claims/release — the handler failed: delete the claim so the sender's retry is processed.
 * Callers: scope claims:write. 200 · 404 unknown or expired key · 409 wrong claimToken.
 */
import { actorOf } from "@/lib/auth/principal";
import { releaseClaim } from "@/lib/claims/settle";
import { json, readJson, route } from "@/lib/http/route";

export const POST = route(
  async ({ req, principal }) => json(await releaseClaim((await readJson(req)) as never, { actor: actorOf(principal) })),
  { allow: ["claims:write"] },
);
