/**
 * POST /api/v1/sources/:name/extend — extend the source's live keys to its current TTL (counted from each
 * key's claim); never shortens, leaves expired keys alone, recorded in the action log. Operators.
 */
import { extendLiveKeys } from "@/lib/sources/sources";
import { json, route } from "@/lib/http/route";

export const POST = route<{ name: string }>(
  async ({ params, principal }) => json(await extendLiveKeys(params.name, principal)),
  { allow: ["operator"] },
);
