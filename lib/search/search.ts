/**
 * The console's global search: one query text, matched against what an on-call engineer pastes — an event
 * id (exact or its beginning, over the audit history, which keeps every claimed event long after its key
 * is pruned), a dead letter (its id, the first 8+ characters of it, or its event id), a replay (its id or
 * the first 8+ characters) and a source (its name, anywhere in it). Raw SQL: prefix matches use the audit
 * history's `text_pattern_ops` index on event_id, each statement bounded by a LIMIT; id prefixes scan the
 * (small) replays and dead-letter tables only when the text looks like the start of a UUID.
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { isUuid } from "@/lib/http/ids";
import type { SearchQuery, SearchResponse, SearchResult } from "./schema";

const PER_KIND = 8;
const UUID_PREFIX_RE = /^[0-9a-f]{8}(-[0-9a-f-]{0,27})?$/i;

/** `text` as a LIKE prefix pattern, its own % _ and \ matched literally. */
const likePrefix = (text: string) => `${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
const path = (...parts: string[]) => `/${parts.map(encodeURIComponent).join("/")}`;

export async function searchConsole({ q, limit }: SearchQuery): Promise<SearchResponse> {
  const uuid = isUuid(q) ? q.toLowerCase() : null;
  const idPrefix = UUID_PREFIX_RE.test(q) ? likePrefix(q.toLowerCase()) : null;

  const [sources, events, letters, replays] = await Promise.all([
    query(
      z.object({ name: z.string() }),
      `SELECT name FROM sources WHERE strpos(lower(name), lower($1)) > 0 ORDER BY (lower(name) = lower($1)) DESC, name LIMIT ${PER_KIND}`,
      [q],
    ),
    // Prefix matches first bounded, then one row per (source, event) with its latest entry.
    query(
      z.object({ source: z.string(), event_id: z.string(), event_type: z.string().nullable(), at: z.date() }),
      `SELECT source, event_id, (array_agg(event_type ORDER BY at DESC))[1] AS event_type, max(at) AS at
         FROM (SELECT source, event_id, event_type, at FROM audit_events
                WHERE event_id LIKE $1 AND source IS NOT NULL LIMIT 200) hits
        GROUP BY source, event_id
        ORDER BY (event_id = $2) DESC, max(at) DESC
        LIMIT ${PER_KIND}`,
      [likePrefix(q), q],
    ),
    query(
      z.object({ id: z.string(), source: z.string(), event_id: z.string(), status: z.string(), failed_at: z.date() }),
      `SELECT id::text AS id, source, event_id, status, failed_at FROM dead_letters
        WHERE ($1::uuid IS NOT NULL AND id = $1::uuid) OR ($2::text IS NOT NULL AND id::text LIKE $2) OR event_id = $3
        ORDER BY failed_at DESC LIMIT ${PER_KIND}`,
      [uuid, idPrefix, q],
    ),
    uuid || idPrefix
      ? query(
          z.object({ id: z.string(), source: z.string(), status: z.string(), created_at: z.date() }),
          `SELECT id::text AS id, source, status, created_at FROM replays
            WHERE ($1::uuid IS NOT NULL AND id = $1::uuid) OR id::text LIKE $2
            ORDER BY created_at DESC LIMIT ${PER_KIND}`,
          [uuid, idPrefix ?? likePrefix(q.toLowerCase())],
        )
      : Promise.resolve([]),
  ]);

  const results: SearchResult[] = [
    ...events.map((e) => ({
      kind: "event" as const,
      label: e.event_id,
      detail: `event · ${e.source}${e.event_type ? ` · ${e.event_type}` : ""}`,
      at: e.at.toISOString(),
      href: path("events", e.source, e.event_id),
    })),
    ...letters.map((l) => ({
      kind: "dead_letter" as const,
      label: l.event_id,
      detail: `dead letter ${l.id.slice(0, 8)} · ${l.source} · ${l.status}`,
      at: l.failed_at.toISOString(),
      href: path("dead-letters", l.id),
    })),
    ...replays.map((r) => ({
      kind: "replay" as const,
      label: r.id,
      detail: `replay · ${r.source} · ${r.status}`,
      at: r.created_at.toISOString(),
      href: path("replays", r.id),
    })),
    ...sources.map((s) => ({ kind: "source" as const, label: s.name, detail: "source", at: null, href: path("sources", s.name) })),
  ];
  // An exact hit first, whatever its kind.
  const exact = (r: SearchResult) => (r.label === q || r.label.toLowerCase() === q.toLowerCase() ? 0 : 1);
  results.sort((a, b) => exact(a) - exact(b));
  return { query: q, results: results.slice(0, limit) };
}
