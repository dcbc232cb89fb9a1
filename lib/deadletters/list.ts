/**
 * Reading dead letters: a filtered, keyset-paginated listing (newest failure first, or the letters whose
 * keys expire soonest first) with counts by source and by error and the key risk of pending letters, and
 * one letter with its payload. Each letter carries its dedup key's state, looked up by (source, event_id)
 * only, which works whether dedup_keys is one table or partitioned.
 */
import "server-only";
import { z } from "zod";
import { query, sqlParams } from "@/lib/db/sql";
import { KeywardError } from "@/lib/errors";
import { database, type Db } from "@/lib/db/transaction";
import { pageOf } from "@/lib/pagination";
import { KEY_PROCESSED_SQL, KEY_STATES, KEY_STATE_SQL, KEY_UNSAFE_SQL, keyFactsJoin } from "@/lib/keys/verdict";
import {
  DEAD_LETTER_STATUSES,
  letterOriginSchema,
  PAYLOAD_PREVIEW_BYTES,
  type DeadLetter,
  type DeadLetterDetail,
  type DeadLetterList,
  type ListDeadLettersQuery,
} from "./schema";


const Row = z.object({
  id: z.string(),
  source: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  error: z.string(),
  attempts: z.number(),
  failed_at: z.date(),
  queue: z.string().nullable(),
  status: z.enum(DEAD_LETTER_STATUSES),
  received_at: z.date(),
  settled_at: z.date().nullable(),
  key_state: z.enum(KEY_STATES),
  key_expires_at: z.date().nullable(),
  key_processed: z.boolean(),
  sort_us: z.string(),
});
type Row = z.output<typeof Row>;

/**
 * Each letter's key facts, by the database clock: lib/keys/verdict.ts keyFactsJoin, the one reading shared
 * with the preflight and the replay worker; the state and `processed` are decideKey's, in SQL.
 */
export const KEY_JOIN = keyFactsJoin("d.source", "d.event_id");

const COLUMNS = `d.id, d.source, d.event_id, d.event_type, d.error, d.attempts, d.failed_at, d.queue, d.status,
  d.received_at, d.settled_at, ${KEY_STATE_SQL} AS key_state, key.expires_at AS key_expires_at,
  ${KEY_PROCESSED_SQL} AS key_processed`;

function toDeadLetter(r: Omit<Row, "sort_us">): DeadLetter {
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
  const { values, p } = sqlParams();
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
  const rows = await query(
    Row,
    `SELECT ${COLUMNS}, ${q.sort === "failedAt" ? "''" : `${sortKey}::text`} AS sort_us
     FROM dead_letters d ${KEY_JOIN} ${where(page)} ORDER BY ${order} LIMIT ${limitParam}`,
    values,
    db,
  );
  const { items, next } = pageOf(rows, q.limit, toDeadLetter, (last) => ({
    s: q.sort,
    v: q.sort === "failedAt" ? last.failed_at.toISOString() : last.sort_us,
    i: last.id,
  }));

  const [counts] = await query(
    z.object({
      total: z.number(),
      by_source: z.array(z.object({ source: z.string(), count: z.number() })),
      by_error: z.array(z.object({ error: z.string(), count: z.number() })),
      risk_expired: z.number(),
      risk_soon: z.number(),
    }),
    `WITH f AS MATERIALIZED (SELECT d.source, d.error FROM dead_letters d ${where(filters)}),
          risk AS (
            SELECT count(*) FILTER (WHERE ${KEY_UNSAFE_SQL}) AS expired,
                   count(*) FILTER (WHERE key.expires_at > now() AND key.expires_at <= now() + interval '24 hours') AS soon
            FROM dead_letters d ${KEY_JOIN} ${where([...common, "d.status = 'pending'"])})
     SELECT (SELECT count(*) FROM f) AS total,
            coalesce((SELECT jsonb_agg(jsonb_build_object('source', source, 'count', n) ORDER BY n DESC, source)
                      FROM (SELECT source, count(*) AS n FROM f GROUP BY source) s), '[]') AS by_source,
            coalesce((SELECT jsonb_agg(jsonb_build_object('error', error, 'count', n) ORDER BY n DESC, error)
                      FROM (SELECT error, count(*) AS n FROM f GROUP BY error ORDER BY n DESC, error LIMIT 20) e), '[]') AS by_error,
            (SELECT expired FROM risk) AS risk_expired, (SELECT soon FROM risk) AS risk_soon`,
    values.slice(0, filterValues),
    db,
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
 * One letter with its payload exactly as stored (base64, and as text when it is UTF-8), whole up to
 * PAYLOAD_PREVIEW_BYTES, else its first PAYLOAD_PREVIEW_BYTES (`payloadTruncated`; the whole is at
 * GET …/{id}/payload); 404 for an unknown id. Raw SQL: the key's state by the database clock (KEY_JOIN),
 * as in the list, and only the payload's first part read (substring).
 */
export async function getDeadLetter(id: string, db: Db = database()): Promise<DeadLetterDetail> {
  const [row] = await query(
    Row.omit({ sort_us: true }).extend({
      payload: z.instanceof(Buffer),
      payload_bytes: z.number(),
      content_type: z.string(),
      last_replay_error: z.string().nullable(),
      inlet_id: z.string().nullable(),
      origin_exchange: z.string().nullable(),
      origin_routing_key: z.string().nullable(),
      unidentified_reason: z.string().nullable(),
      last_replay_status: z.number().nullable(),
      settled_by: z.string().nullable(),
      settle_reason: z.string().nullable(),
      sender_headers: z.array(z.object({ name: z.string(), value: z.string() })).nullable(),
      origin: letterOriginSchema.nullable(),
    }),
    `SELECT ${COLUMNS}, substring(d.payload FROM 1 FOR $2::int) AS payload, d.payload_bytes, d.content_type, d.last_replay_error,
            d.inlet_id, d.origin_exchange, d.origin_routing_key, d.unidentified_reason, d.last_replay_status, d.settled_by,
            d.settle_reason, d.sender_headers, d.origin
     FROM dead_letters d ${KEY_JOIN} WHERE d.id = $1`,
    [id, PAYLOAD_PREVIEW_BYTES],
    db,
  );
  if (!row) throw KeywardError.notFound("dead_letter_not_found", `no dead letter ${id}`);
  const truncated = row.payload_bytes > row.payload.length;
  return {
    ...toDeadLetter(row),
    contentType: row.content_type,
    payloadBytes: row.payload_bytes,
    payloadTruncated: truncated,
    payloadBase64: row.payload.toString("base64"),
    payloadText: utf8Text(row.payload, truncated),
    senderHeaders: row.sender_headers ?? [],
    lastReplayError: row.last_replay_error,
    amqp:
      row.inlet_id || row.origin_exchange !== null
        ? { inletId: row.inlet_id, exchange: row.origin_exchange, routingKey: row.origin_routing_key }
        : null,
    origin: row.origin,
    unidentifiedReason: row.unidentified_reason,
    lastReplayStatus: row.last_replay_status,
    settledBy: row.settled_by,
    settleReason: row.settle_reason,
  };
}

/**
 * `bytes` as text when they are UTF-8, else null. A `cut` prefix may end inside a character: up to three
 * bytes of an incomplete last sequence are left out (the rest must decode). Pure.
 */
export function utf8Text(bytes: Buffer, cut: boolean): string | null {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  for (let drop = 0; drop <= (cut ? 3 : 0); drop++) {
    try {
      return decoder.decode(bytes.subarray(0, bytes.length - drop));
    } catch {
      /* try one byte less */
    }
  }
  return null;
}
