/**
 * Reading dead letters: a filtered, keyset-paginated listing (newest failure first, or the letters whose
 * keys expire soonest first) with counts by source and by error and the key risk of pending letters, and
 * one letter with its payload. Each letter carries its dedup key's state, looked up by (source, event_id)
 * only, which works whether dedup_keys is one table or partitioned.
 */
import "server-only";
import { KeywardError } from "../errors";
import { database, type Db } from "../db/transaction";
import { pageOf } from "../pagination";
import {
  type DeadLetter,
  type DeadLetterDetail,
  type DeadLetterList,
  type DeadLetterStatus,
  type KeyStateName,
  type ListDeadLettersQuery,
} from "./schema";

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Row = {
  id: string;
  source: string;
  event_id: string;
  event_type: string;
  error: string;
  attempts: number;
  failed_at: Date;
  queue: string | null;
  status: DeadLetterStatus;
  received_at: Date;
  settled_at: Date | null;
  key_state: KeyStateName;
  key_expires_at: Date | null;
  key_processed: boolean;
  sort_us: string;
};

/** The key of each letter, by the database clock: none (no row), expired, in_flight (a running lease), alive. */
const KEY_JOIN = `
LEFT JOIN LATERAL (
  SELECT k.expires_at,
         CASE WHEN k.expires_at <= now() THEN 'expired'
              WHEN k.status = 'processing' AND k.lease_expires_at > now() THEN 'in_flight'
              ELSE 'alive' END AS state
  FROM dedup_keys k WHERE k.source = d.source AND k.event_id = d.event_id
) key ON true
LEFT JOIN LATERAL (
  -- Without a live key: was the event processed (the newest deciding audit row is not a release)? Then a
  -- replay could process it twice (issue 13 §13: the keys-at-risk count leaves out never-processed letters).
  SELECT a.kind <> 'released' AS processed FROM audit_events a
  WHERE (key.expires_at IS NULL OR key.expires_at <= now())
    AND a.source = d.source AND a.event_id = d.event_id
    AND a.kind IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry', 'completed', 'released')
  ORDER BY a.at DESC, a.id DESC LIMIT 1
) proc ON true`;

const COLUMNS = `d.id, d.source, d.event_id, d.event_type, d.error, d.attempts, d.failed_at, d.queue, d.status,
  d.received_at, d.settled_at, coalesce(key.state, 'none') AS key_state, key.expires_at AS key_expires_at,
  coalesce(proc.processed, false) AS key_processed`;

function toDeadLetter(r: Row): DeadLetter {
  return {
    id: r.id,
    source: r.source,
    eventId: r.event_id,
    eventType: r.event_type,
    error: r.error,
    attempts: r.attempts,
    failedAt: r.failed_at.toISOString(),
    queue: r.queue,
    status: r.status,
    receivedAt: r.received_at.toISOString(),
    settledAt: r.settled_at?.toISOString() ?? null,
    key: { state: r.key_state, expiresAt: r.key_expires_at?.toISOString() ?? null, processed: r.key_processed },
  };
}

/** `%` and `_` in the search text are literal. */
export const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * Lists dead letters with counts (the counts ignore the cursor and the status filter's paging, not the filters).
 * Raw SQL: keyset pages over a LATERAL key lookup and an ordering on the key's expiry, and the counts in
 * one statement with a MATERIALIZED CTE.
 */
export async function listDeadLetters(q: ListDeadLettersQuery, db: Db = database()): Promise<DeadLetterList> {
  const values: unknown[] = [];
  const p = (v: unknown) => `$${values.push(v)}`;
  const filters: string[] = [];
  if (q.source) filters.push(`d.source = ${p(q.source)}`);
  if (q.from) filters.push(`d.failed_at >= ${p(q.from)}::timestamptz`);
  if (q.to) filters.push(`d.failed_at < ${p(q.to)}::timestamptz`);
  if (q.errorContains) filters.push(`d.error ILIKE ${p(likePattern(q.errorContains))}`);
  const common = [...filters];
  if (q.status) filters.push(`d.status = ${p(q.status)}`);
  const filterValues = values.length;

  // Keyset: newest failure first on the (failed_at, id) indexes; or the key expiring soonest first, letters
  // without a key (none, or already pruned) at the very front.
  const sortKey =
    q.sort === "failedAt"
      ? "d.failed_at"
      : "(CASE WHEN key.expires_at IS NULL THEN -1 ELSE (extract(epoch FROM key.expires_at) * 1000000)::bigint END)";
  const page = [...filters];
  if (q.cursor) {
    const c = q.cursor;
    page.push(
      q.sort === "failedAt"
        ? `(d.failed_at, d.id) < (${p(c.v)}::timestamptz, ${p(c.i)}::uuid)`
        : `(${sortKey}, d.id) > (${p(c.v)}::bigint, ${p(c.i)}::uuid)`,
    );
  }
  const where = (f: string[]) => (f.length ? `WHERE ${f.join(" AND ")}` : "");
  const order = q.sort === "failedAt" ? "d.failed_at DESC, d.id DESC" : `${sortKey} ASC, d.id ASC`;
  const limitParam = p(q.limit + 1);
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS}, ${q.sort === "failedAt" ? "''" : `${sortKey}::text`} AS sort_us
     FROM dead_letters d ${KEY_JOIN} ${where(page)} ORDER BY ${order} LIMIT ${limitParam}`,
    values,
  );
  const { items, next } = pageOf(rows, q.limit, toDeadLetter, (last) => ({
    s: q.sort,
    v: q.sort === "failedAt" ? last.failed_at.toISOString() : last.sort_us,
    i: last.id,
  }));

  const [counts] = await db.query<{
    total: number;
    by_source: { source: string; count: number }[];
    by_error: { error: string; count: number }[];
    risk_expired: number;
    risk_soon: number;
  }>(
    `WITH f AS MATERIALIZED (SELECT d.source, d.error FROM dead_letters d ${where(filters)}),
          risk AS (
            SELECT count(*) FILTER (WHERE (key.expires_at IS NULL OR key.expires_at <= now()) AND proc.processed) AS expired,
                   count(*) FILTER (WHERE key.expires_at > now() AND key.expires_at <= now() + interval '24 hours') AS soon
            FROM dead_letters d ${KEY_JOIN} ${where([...common, "d.status = 'pending'"])})
     SELECT (SELECT count(*) FROM f) AS total,
            coalesce((SELECT jsonb_agg(jsonb_build_object('source', source, 'count', n) ORDER BY n DESC, source)
                      FROM (SELECT source, count(*) AS n FROM f GROUP BY source) s), '[]') AS by_source,
            coalesce((SELECT jsonb_agg(jsonb_build_object('error', error, 'count', n) ORDER BY n DESC, error)
                      FROM (SELECT error, count(*) AS n FROM f GROUP BY error ORDER BY n DESC, error LIMIT 20) e), '[]') AS by_error,
            (SELECT expired FROM risk) AS risk_expired, (SELECT soon FROM risk) AS risk_soon`,
    values.slice(0, filterValues),
  );
  return {
    items,
    next,
    counts: {
      total: counts.total,
      bySource: counts.by_source,
      byError: counts.by_error,
      keyRisk: { expired: counts.risk_expired, expiringSoon: counts.risk_soon },
    },
  };
}

/**
 * One letter with its payload exactly as stored (base64, and as text when it is UTF-8); 404 for an unknown
 * id. Raw SQL: the key's state by the database clock (KEY_JOIN), as in the list.
 */
export async function getDeadLetter(id: string, db: Db = database()): Promise<DeadLetterDetail> {
  if (!UUID_RE.test(id)) throw KeywardError.notFound("dead_letter_not_found", `no dead letter ${id}`);
  const [row] = await db.query<
    Row & {
      payload: Buffer;
      content_type: string;
      last_replay_error: string | null;
      inlet_id: string | null;
      origin_exchange: string | null;
      origin_routing_key: string | null;
      unidentified_reason: string | null;
      last_replay_status: number | null;
      settled_by: string | null;
      settle_reason: string | null;
    }
  >(
    `SELECT ${COLUMNS}, d.payload, d.content_type, d.last_replay_error, d.inlet_id, d.origin_exchange, d.origin_routing_key,
            d.unidentified_reason, d.last_replay_status, d.settled_by, d.settle_reason
     FROM dead_letters d ${KEY_JOIN} WHERE d.id = $1`,
    [id],
  );
  if (!row) throw KeywardError.notFound("dead_letter_not_found", `no dead letter ${id}`);
  let payloadText: string | null;
  try {
    payloadText = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(row.payload);
  } catch {
    payloadText = null;
  }
  return {
    ...toDeadLetter(row),
    contentType: row.content_type,
    payloadBytes: row.payload.length,
    payloadBase64: row.payload.toString("base64"),
    payloadText,
    lastReplayError: row.last_replay_error,
    amqp:
      row.inlet_id || row.origin_exchange !== null
        ? { inletId: row.inlet_id, exchange: row.origin_exchange, routingKey: row.origin_routing_key }
        : null,
    unidentifiedReason: row.unidentified_reason,
    lastReplayStatus: row.last_replay_status,
    settledBy: row.settled_by,
    settleReason: row.settle_reason,
  };
}
