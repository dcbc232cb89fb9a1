/**
 * POST /api/v1/sources/:name/extend — extend the source's live keys to its current TTL (counted from each
 * key's claim); never shortens, leaves expired keys alone, recorded in the action log. Operators.
 */
import { extendLiveKeys } from "@/lib/sources/sources";
import { extendedKeysSchema, sourceParams } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ params, principal }) => json(await extendLiveKeys(params.name, principal)), {
  allow: ["operator"],
  params: sourceParams,
  summary: "Extend the source's live keys to its current TTL",
  responses: { 200: { description: "{ source, ttlSeconds, extended }", schema: extendedKeysSchema } },
  errors: [404],
});
