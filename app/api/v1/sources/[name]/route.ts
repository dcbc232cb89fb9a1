/**
 * GET /api/v1/sources/:name — one source's report (viewers and up). PATCH — change its preset, parts or
 * dead-letter retention (admins); applies to new claims, live keys keep their expiry (see ./extend).
 */
import { sourceReports, updateSource } from "@/lib/sources/sources";
import { sourceInfoSchema, sourceParams, sourceReportSchema, updateSourceRequest } from "@/lib/sources/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async ({ params }) => json((await sourceReports(params.name))[0]), {
  allow: ["read"],
  params: sourceParams,
  summary: "One source's report",
  responses: { 200: { description: "The source with its checks and projected size", schema: sourceReportSchema } },
  errors: [404],
});

export const PATCH = route(async ({ params, body, principal }) => json(await updateSource(params.name, body, principal)), {
  allow: ["admin"],
  params: sourceParams,
  body: updateSourceRequest,
  maxBodyBytes: 4096,
  summary: "Change a source's preset, TTL parts, dead-letter retention or replay destination",
  responses: { 200: { description: "The source after the change", schema: sourceInfoSchema } },
  errors: [404],
});
