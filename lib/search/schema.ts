/**
 * The console's global search (GET /api/v1/search?q=…, the `/` or Cmd-K box on every page): what it
 * accepts and what it answers. Shared by the route, the console and the tests.
 */
import { z } from "zod";

export const SEARCH_KINDS = ["source", "event", "dead_letter", "replay"] as const;
export const MAX_SEARCH_RESULTS = 20;

export const searchQuery = z.strictObject({
  /** An event id (or its beginning), a dead letter or replay id (or its first 8+ characters), a source name. */
  q: z.string().trim().min(1, "type something to search for").max(200, "at most 200 characters"),
  limit: z.coerce.number().int().min(1).max(MAX_SEARCH_RESULTS).default(MAX_SEARCH_RESULTS),
});
export type SearchQuery = z.infer<typeof searchQuery>;

export const searchResult = z.strictObject({
  kind: z.enum(SEARCH_KINDS),
  /** What the hit is called: the source name, the event id, the replay's id. */
  label: z.string(),
  /** One line of context: the source, type, state, when. */
  detail: z.string(),
  /** When it last happened (an event's latest audit entry, a letter's failure, a replay's start), ISO; null for a source. */
  at: z.string().nullable(),
  /** The console page that shows it. */
  href: z.string(),
});
export type SearchResult = z.infer<typeof searchResult>;

export const searchResponse = z.strictObject({ query: z.string(), results: z.array(searchResult) });
export type SearchResponse = z.infer<typeof searchResponse>;
