/**
 * GET /api/v1/sources/:name — one source's report (viewers and up). PATCH — change its preset, parts or
 * dead-letter retention (admins); applies to new claims, live keys keep their expiry (see ./extend).
 */
import { sourceReports, updateSource } from "@/lib/sources/sources";
import { json, readJson, route } from "@/lib/http/route";

export const GET = route<{ name: string }>(async ({ params }) => json((await sourceReports(params.name))[0]), {
  allow: ["read"],
});

export const PATCH = route<{ name: string }>(
  async ({ req, params, principal }) => json(await updateSource(params.name, await readJson(req, 4096), principal)),
  { allow: ["admin"] },
);
