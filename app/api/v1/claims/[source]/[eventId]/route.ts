/**
 * GET /api/v1/claims/{source}/{eventId} — the key's state now: alive (time left), expired, or unknown.
 * Callers: scope claims:read (claims:write implies it).
 */
import { getKeyState } from "@/lib/claims/state";
import { json, route } from "@/lib/http/route";

export const GET = route<{ source: string; eventId: string }>(
  async ({ params }) => json(await getKeyState(params)),
  { allow: ["claims:read"] },
);
