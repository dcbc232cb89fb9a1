/**
 * GET /api/v1/search?q&limit — the console's global search (`/` or Cmd-K): events (id or its beginning),
 * dead letters (id, its first 8+ characters, or event id), replays (id or its first 8+ characters) and
 * sources (name), exact hits first, each with the console page that shows it. Viewers and up; API keys
 * with scope read.
 */
import { json, route } from "@/lib/http/route";
import { searchResponse, searchQuery } from "@/lib/search/schema";
import { searchConsole } from "@/lib/search/search";

export const GET = route(async ({ query }) => json(await searchConsole(query)), {
  allow: ["read"],
  query: searchQuery,
  summary: "Search events, dead letters, replays and sources by id or name",
  responses: { 200: { description: "{ query, results: [{ kind, label, detail, at, href }] }", schema: searchResponse } },
});
