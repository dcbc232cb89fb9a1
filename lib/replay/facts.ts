/**
 * Reading what classification needs, per batch in one statement: each event's dedup key (looked up by
 * (source, event_id) only, so it works on a partitioned dedup_keys too) and its newest deciding audit row
 * (through the (source, event_id, at DESC) index). Both as of the statement's `now()`, which is returned.
 * Raw SQL: a hot statement, prepared once per connection (the executor runs it before every send, see
 * docs/benchmarks.md), with LATERAL lookups Prisma cannot express.
 */
import "server-only";
import { query, type PreparedSql, type Queryable } from "../db/sql";
import { DECIDING_KINDS, type AuditFact, type KeyFact } from "./classify";

type FactRow = {
  event_id: string;
  now: Date;
  expires_at: Date | null;
  status: "done" | "processing" | null;
  lease_expires_at: Date | null;
  last_kind: AuditFact["lastKind"] | null;
  last_at: Date | null;
};

const FACTS_SQL = `
SELECT e.event_id, now() AS now, k.expires_at, k.status, k.lease_expires_at, a.kind AS last_kind, a.at AS last_at
FROM unnest($2::text[]) AS e(event_id)
LEFT JOIN LATERAL (
  SELECT expires_at, status, lease_expires_at FROM dedup_keys WHERE source = $1 AND event_id = e.event_id
) k ON true
LEFT JOIN LATERAL (
  SELECT kind, at FROM audit_events
  WHERE source = $1 AND event_id = e.event_id AND kind = ANY($3::text[])
  ORDER BY at DESC, id DESC LIMIT 1
) a ON true`;

/** FACTS_SQL as a named prepared statement: the executor runs it before every send. */
const FACTS_PREPARED: PreparedSql = { name: "keyward_replay_facts", text: FACTS_SQL };

export type Facts = { now: Date; keys: KeyFact[]; audit: AuditFact[] };

/** FACTS_SQL's parameters, or null when there are no events (then ask only for now()). */
function factsParams(source: string, eventIds: readonly string[]): unknown[] | null {
  const distinct = [...new Set(eventIds)];
  return distinct.length ? [source, distinct, [...DECIDING_KINDS]] : null;
}
const NOW_SQL = "SELECT NULL::text AS event_id, now() AS now";

function factsFromRows(rows: FactRow[]): Facts {
  const keys: KeyFact[] = [];
  const audit: AuditFact[] = [];
  for (const r of rows) {
    if (r.expires_at && r.status) keys.push({ eventId: r.event_id, expiresAt: r.expires_at, status: r.status, leaseExpiresAt: r.lease_expires_at });
    if (r.last_kind && r.last_at) audit.push({ eventId: r.event_id, lastKind: r.last_kind, lastAt: r.last_at });
  }
  return { now: rows[0].now, keys, audit };
}

/**
 * The keys and audit facts of these events of one source, and the database's now: on the shared pool, or
 * on `on` (a transaction's handle: then as that transaction sees them).
 */
export async function readFacts(source: string, eventIds: readonly string[], on?: Queryable): Promise<Facts> {
  const params = factsParams(source, eventIds);
  return factsFromRows(params ? await query<FactRow>(FACTS_PREPARED, params, on) : await query<FactRow>(NOW_SQL, [], on));
}
