/**
 * Reading what classification needs, per batch in one statement: each event's dedup key (looked up by
 * (source, event_id) only, so it works on a partitioned dedup_keys too) and its newest deciding audit row
 * (through the (source, event_id, at DESC) index). Both as of the statement's `now()`, which is returned.
 * Raw SQL: a hot statement, prepared once per connection (the executor runs it before every send, see
 * docs/benchmarks.md), with LATERAL lookups Prisma cannot express.
 */
import "server-only";
import { z } from "zod";
import { query, type PreparedSql } from "@/lib/db/sql";
import { KEY_FACT_COLUMNS, keyFactsJoin, KeyFactsRow } from "@/lib/keys/verdict";
import type { AuditFact, KeyFact } from "./classify";
import type { Db } from "@/lib/db/transaction";

const FactRow = KeyFactsRow.extend({ event_id: z.string(), now: z.date() });
type FactRow = z.output<typeof FactRow>;

/** The facts of each event: lib/keys/verdict.ts keyFactsJoin, the one reading shared with the worker's lease batch. */
export const FACTS_SQL = `
SELECT e.event_id, now() AS now, ${KEY_FACT_COLUMNS}
FROM unnest($2::text[]) AS e(event_id)
${keyFactsJoin("$1", "e.event_id")}`;

/** FACTS_SQL as a named prepared statement: the executor runs it before every send. */
const FACTS_PREPARED: PreparedSql = { name: "keyward_replay_facts", text: FACTS_SQL };

export type Facts = { now: Date; keys: KeyFact[]; audit: AuditFact[] };

/** FACTS_SQL's parameters, or null when there are no events (then ask only for now()). */
function factsParams(source: string, eventIds: readonly string[]): unknown[] | null {
  const distinct = [...new Set(eventIds)];
  return distinct.length ? [source, distinct] : null;
}
const NOW_SQL = "SELECT now() AS now";
const NowRow = z.object({ now: z.date() });

function factsFromRows(rows: FactRow[]): Facts {
  const keys: KeyFact[] = [];
  const audit: AuditFact[] = [];
  for (const r of rows) {
    const f = factsOfRow(r.event_id, r);
    if (f.key) keys.push(f.key);
    if (f.fact) audit.push(f.fact);
  }
  return { now: rows[0].now, keys, audit };
}

/** One event's key and audit fact from keyFactsJoin's columns (as classify.ts takes them). */
export function factsOfRow(eventId: string, r: KeyFactsRow): { key?: KeyFact; fact?: AuditFact } {
  return {
    key:
      r.key_expires_at && r.key_status
        ? { eventId, expiresAt: r.key_expires_at, status: r.key_status as KeyFact["status"], leaseExpiresAt: r.key_lease_expires_at }
        : undefined,
    fact: r.last_kind && r.last_at ? { eventId, lastKind: r.last_kind as AuditFact["lastKind"], lastAt: r.last_at } : undefined,
  };
}

/**
 * The keys and audit facts of these events of one source, and the database's now: on the shared pool, or
 * on `on` (a transaction's handle: then as that transaction sees them).
 */
export async function readFacts(source: string, eventIds: readonly string[], db?: Db): Promise<Facts> {
  const params = factsParams(source, eventIds);
  if (!params) return { now: (await query(NowRow, NOW_SQL, [], db))[0].now, keys: [], audit: [] };
  return factsFromRows(await query(FactRow, FACTS_PREPARED, params, db));
}
