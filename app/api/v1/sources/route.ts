/**
 * GET /api/v1/sources — sources with their TTL parts (viewers and up). POST — create one:
 * { name, retryWindowSeconds, queueLagSeconds, clockSkewSeconds, replaySeconds } (admins only).
 */
import { createSource, listSources } from "@/lib/sources/sources";
import { json, readJson, route } from "@/lib/http/route";

export const GET = route(async () => json({ sources: await listSources() }), { allow: ["read"] });

export const POST = route(
  async ({ req, principal }) => json(await createSource((await readJson(req, 4096)) as never, principal), 201),
  { allow: ["admin"] },
);
