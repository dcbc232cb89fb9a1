/**
 * The "did we process X" answer for one event: its dedup key now (read only by source and event id, so
 * it works whether dedup_keys is one table or partitioned) and its audit timeline within the retention,
 * explained by explainEvent (pure). Works for keys pruned long ago: the history outlives them.
 */
import "server-only";
import { z } from "zod";
import { query, type PreparedSql } from "@/lib/db/sql";
import { readQuery } from "@/lib/db/read";
import { explainEvent } from "./explain";
import { AUDIT_COLUMNS, auditRetentionDays, DbRow, toAuditRow } from "./search";
import type { EventAnswer, KeyRow } from "./schema";
import { claimStatus } from "@/lib/claims/schema";

export const TIMELINE_LIMIT = 1000;

// Prepared: planning the timeline over a year of partitions costs more than running it.
const KEY_SQL: PreparedSql = {
  name: "keyward_event_key",
  text: `SELECT now() AS now, k.* FROM (SELECT 1) AS one LEFT JOIN LATERAL (
    SELECT event_type, status, received_at, expires_at, lease_expires_at, duplicate_count, last_duplicate_at
    FROM dedup_keys WHERE source = $1 AND event_id = $2) AS k ON true`,
};

const TIMELINE_SQL: PreparedSql = {
  name: "keyward_event_timeline",
  text: `SELECT ${AUDIT_COLUMNS} FROM audit_events
    WHERE source = $1 AND event_id = $2 AND at >= now() - make_interval(days => $3)
    ORDER BY audit_events.at DESC, audit_events.id DESC LIMIT $4`,
};

const KeyDbRow = z.object({
  now: z.date(),
  event_type: z.string().nullable(),
  status: claimStatus.nullable(),
  received_at: z.date().nullable(),
  expires_at: z.date().nullable(),
  lease_expires_at: z.date().nullable(),
  duplicate_count: z.number().nullable(),
  last_duplicate_at: z.date().nullable(),
});
type KeyDbRow = z.output<typeof KeyDbRow>;

/** Raw SQL: per source, an EXISTS on the (source, event_id) key and audit indexes (an id-only lookup would scan). */
const OTHER_SOURCES_SQL = `
SELECT s.name FROM sources s
WHERE s.name <> $1
  AND (EXISTS (SELECT 1 FROM dedup_keys k WHERE k.source = s.name AND k.event_id = $2)
       OR EXISTS (SELECT 1 FROM audit_events a WHERE a.source = s.name AND a.event_id = $2 AND a.at >= now() - make_interval(days => $3)))
ORDER BY s.name LIMIT 10`;

export async function getEventAnswer({ source, eventId }: { source: string; eventId: string }): Promise<EventAnswer> {
  const retentionDays = auditRetentionDays();
  const [keyRows, timelineRows] = await Promise.all([
    // The key's state from the primary (a release or complete just made must show); the history may come
    // from a read replica (lib/db/read.ts).
    query(KeyDbRow, KEY_SQL, [source, eventId]),
    readQuery(DbRow, TIMELINE_SQL, [source, eventId, retentionDays, TIMELINE_LIMIT + 1]),
  ]);
  const k = keyRows[0];
  const row: KeyRow | null =
    k.status && k.received_at && k.expires_at
      ? {
          eventType: k.event_type ?? "",
          status: k.status,
          receivedAt: k.received_at.toISOString(),
          expiresAt: k.expires_at.toISOString(),
          leaseExpiresAt: k.lease_expires_at?.toISOString() ?? null,
          duplicateCount: k.duplicate_count ?? 0,
          lastDuplicateAt: k.last_duplicate_at?.toISOString() ?? null,
        }
      : null;
  const timeline = timelineRows.slice(0, TIMELINE_LIMIT).map(toAuditRow).reverse();
  // Never seen here: which other sources know this id (looked up source by source, on their indexes).
  const otherSources =
    row === null && timeline.length === 0
      ? (await readQuery(z.object({ name: z.string() }), OTHER_SOURCES_SQL, [source, eventId, retentionDays])).map((r) => r.name)
      : [];
  return {
    ...explainEvent({ source, eventId, row }, timeline, k.now),
    asOf: k.now.toISOString(),
    retentionDays,
    timeline,
    timelineTruncated: timelineRows.length > TIMELINE_LIMIT,
    otherSources,
  };
}
