/**
 * Dead-letter intake: one letter or a batch of up to 500, each written together with its audit row
 * (`dead_lettered`) by one statement, so a letter never exists without its record. A bad item of a batch
 * gets its own error and does not fail the others; results come back in input order.
 *
 * The payload is kept exactly as received: for a JSON `payload`, the bytes of its source text in the
 * request body (located by payload-spans.ts; never parsed and re-serialized, so big integers, `\/`,
 * `200.0`, whitespace and key order survive); for `payloadBase64`, the decoded bytes. Those bytes are
 * what a replay sends and signs.
 */
import "server-only";
import { randomUUID } from "node:crypto";
import { KeywardError } from "../errors";
import { database, type Db } from "../db/transaction";
import { invalidRequest } from "../http/validate";
import { unknownSource } from "../claims/claim";
import { findPayloadSpans, type PayloadSpan } from "./payload-spans";
import type { InletLetter } from "../inlets/message";
import {
  deadLetterInput,
  JSON_CONTENT_TYPE,
  MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
  type BatchItemResult,
  type DeadLetterBatch,
  type DeadLetterFields,
} from "./schema";

type Prepared = {
  id: string;
  source: string;
  eventId: string;
  eventType: string;
  payload: Buffer;
  contentType: string;
  error: string;
  attempts: number;
  failedAt: string | null;
  queue: string | null;
  /** Set for letters from a RabbitMQ inlet (recordInletLetters); null for the HTTP intake. */
  inletId?: string | null;
  originExchange?: string | null;
  originRoutingKey?: string | null;
  originKey?: string | null;
  unidentifiedReason?: string | null;
};

/** Raw SQL: the letters and their audit rows in one statement (an unnest batch), one round trip per request. */
const INSERT_SQL = `
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::text[], $8::int[],
                       $9::timestamptz[], $10::text[], $12::uuid[], $13::text[], $14::text[], $15::text[], $16::text[])
    AS i(id, source, event_id, event_type, payload, content_type, error, attempts, failed_at, queue,
         inlet_id, origin_exchange, origin_routing_key, origin_key, unidentified_reason)
),
ins AS (
  INSERT INTO dead_letters (id, source, event_id, event_type, payload, payload_bytes, content_type, error, attempts, failed_at, queue,
                            inlet_id, origin_exchange, origin_routing_key, origin_key, unidentified_reason, status)
  SELECT id, source, event_id, event_type, payload, length(payload), content_type, error, attempts,
         date_trunc('milliseconds', coalesce(failed_at, now())), queue,
         inlet_id, origin_exchange, origin_routing_key, origin_key, unidentified_reason,
         CASE WHEN unidentified_reason IS NULL THEN 'pending' ELSE 'unidentified' END
  FROM input
  -- An inlet message already stored (redelivered after a crash between commit and ack) is skipped.
  ON CONFLICT (source, origin_key) WHERE origin_key IS NOT NULL DO NOTHING
  RETURNING id, source, event_id, event_type, attempts, queue, error, failed_at, inlet_id, unidentified_reason
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT source, event_id, event_type, 'dead_lettered', $11,
         jsonb_strip_nulls(jsonb_build_object('deadLetterId', id, 'attempts', attempts, 'queue', queue,
                                              'failedAt', failed_at, 'error', left(error, 500),
                                              'inletId', inlet_id, 'unidentified', left(unidentified_reason, 500)))
  FROM ins
)
SELECT id FROM ins`;

/** Inserts the rows with their audit rows in one statement; answers the ids inserted (all but skipped repeats). */
async function insert(rows: Prepared[], actor: string, db: Db): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const col = <K extends keyof Prepared>(k: K) => rows.map((r) => r[k] ?? null);
  const inserted = await db.query<{ id: string }>(INSERT_SQL, [
    col("id"),
    col("source"),
    col("eventId"),
    col("eventType"),
    col("payload"),
    col("contentType"),
    col("error"),
    col("attempts"),
    col("failedAt"),
    col("queue"),
    actor,
    col("inletId"),
    col("originExchange"),
    col("originRoutingKey"),
    col("originKey"),
    col("unidentifiedReason"),
  ]);
  return new Set(inserted.map((r) => r.id));
}

/**
 * Checks what the schema cannot (the payload's depth and size, read from its span in the bytes received)
 * and takes its bytes; throws the KeywardError the single route answers with.
 */
function prepare(d: DeadLetterFields, span: PayloadSpan | undefined, body: Buffer): Prepared {
  const field = d.payloadBase64 === undefined ? "payload" : "payloadBase64";
  const refuse = (status: number, code: string, message: string) =>
    new KeywardError(status, code, `${field}: ${message}`, { fields: [{ field, message }] });
  let payload: Buffer;
  if (d.payloadBase64 !== undefined) {
    payload = Buffer.from(d.payloadBase64, "base64");
  } else {
    // The schema saw a payload, so the scanner found its span (both read the same bytes).
    if (!span) throw new Error("dead-letter intake: no source span for a payload the schema accepted");
    if (span.depth > MAX_PAYLOAD_DEPTH) {
      throw refuse(422, "payload_too_deep", `must nest at most ${MAX_PAYLOAD_DEPTH} arrays/objects deep (it nests ${span.depth})`);
    }
    payload = body.subarray(span.start, span.end);
  }
  if (payload.length > MAX_PAYLOAD_BYTES) {
    throw refuse(413, "payload_too_large", `must be at most ${MAX_PAYLOAD_BYTES} bytes (it is ${payload.length})`);
  }
  return {
    id: randomUUID(),
    source: d.source,
    eventId: d.eventId,
    eventType: d.eventType,
    payload,
    contentType: d.contentType ?? JSON_CONTENT_TYPE,
    error: d.error,
    attempts: d.attempts ?? 0,
    failedAt: d.failedAt ?? null,
    queue: d.queue ?? null,
  };
}

async function knownSources(names: string[], db: Db): Promise<Set<string>> {
  const rows = await db.prisma.source.findMany({ where: { name: { in: [...new Set(names)] } }, select: { name: true } });
  return new Set(rows.map((r) => r.name));
}

/**
 * The bytes a value was parsed from, for in-process callers (the CLI, tests) that hold a JavaScript value
 * rather than request bytes: the value is the source, so it is serialized once, here, and its payload
 * stored as that text.
 */
function serialize(value: unknown): Buffer {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw KeywardError.unprocessable("invalid_request", `body cannot be serialized as JSON: ${(err as Error).message}`);
  }
  if (text === undefined) throw KeywardError.unprocessable("invalid_request", "body must be a JSON object");
  return Buffer.from(text, "utf8");
}

/**
 * Stores one dead letter; resolves with its id. 422 for an unknown source or a payload nested too deep,
 * 413 for an oversize one. `received`: the request body `letter` was parsed from (POST
 * /api/v1/dead-letters), whose bytes of `payload` are stored as sent; without it the letter is serialized.
 */
export async function recordDeadLetter(letter: DeadLetterFields, actor: string, received?: Buffer, db: Db = database()): Promise<{ id: string }> {
  const body = received ?? serialize(letter);
  const row = prepare(letter, findPayloadSpans(body).payload, body);
  if (!(await knownSources([row.source], db)).has(row.source)) throw unknownSource(row.source);
  await insert([row], actor, db);
  return { id: row.id };
}

/**
 * Stores up to 500 dead letters in one statement; per-item results in input order (each item validated
 * on its own: a bad one is that item's error). `received` as for recordDeadLetter (POST …/batch).
 */
export async function recordDeadLetters(
  batch: DeadLetterBatch,
  actor: string,
  received?: Buffer,
  db: Db = database(),
): Promise<BatchItemResult[]> {
  const body = received ?? serialize(batch);
  const spans = findPayloadSpans(body).items;
  const prepared: (Prepared | BatchItemResult)[] = batch.items.map((item, i) => {
    try {
      const parsed = deadLetterInput.safeParse(item);
      if (!parsed.success) throw invalidRequest(parsed.error.issues);
      return prepare(parsed.data, spans[i], body);
    } catch (err) {
      if (!(err instanceof KeywardError)) throw err;
      const fields = (err.details as { fields?: { field: string }[] } | undefined)?.fields;
      // Oversize in a batch is a 422 of that item (the body as a whole was accepted).
      return { error: { code: err.code, message: err.message, ...(fields?.length === 1 ? { field: fields[0].field } : {}) } };
    }
  });
  const valid = prepared.filter((p): p is Prepared => "payload" in p);
  const known = await knownSources(valid.map((p) => p.source), db);
  const results = prepared.map((p): BatchItemResult => {
    if (!("payload" in p)) return p;
    if (!known.has(p.source)) {
      const e = unknownSource(p.source);
      return { error: { code: e.code, message: e.message, field: "source" } };
    }
    return { id: p.id };
  });
  await insert(valid.filter((p) => known.has(p.source)), actor, db);
  return results;
}

/**
 * Stores the dead letters a RabbitMQ inlet made of its messages (lib/inlets/message.ts), through the same
 * statement as the HTTP intake (one row and its `dead_lettered` audit row each), in one round trip.
 * A letter whose message was stored before (same source and originKey: a redelivery) is skipped, so the
 * consumer can acknowledge it again. Answers, in input order, the new letter's id or null for a repeat.
 * The letters were built to be storable (no validation failure can block a queue).
 */
export async function recordInletLetters(letters: InletLetter[], actor: string): Promise<(string | null)[]> {
  const rows: Prepared[] = letters.map((l) => ({ id: randomUUID(), ...l }));
  const inserted = await insert(rows, actor, database());
  return rows.map((r) => (inserted.has(r.id) ? r.id : null));
}
