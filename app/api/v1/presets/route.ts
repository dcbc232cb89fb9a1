/** GET /api/v1/presets — the TTL presets (parts, TTL, what each assumes and where that comes from). */
import { PRESETS, presetListSchema, ttlOfParts } from "@/lib/retention/presets";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json({ presets: PRESETS.map((p) => ({ ...p, ttlSeconds: ttlOfParts(p.parts) })) }), {
  allow: ["read"],
  summary: "The TTL presets: parts, TTL, what each assumes and where that comes from",
  responses: { 200: { description: "{ presets }", schema: presetListSchema } },
});
