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
import { randomUUID } from "node:crypto";
import { KeywardError } from "../errors";
import { query } from "../db/sql";
import { parseOrThrow } from "../http/validate";
import { unknownSource } from "../claims/claim";
import { findPayloadSpans, type PayloadSpan } from "./payload-spans";
import type { InletLetter } from "../inlets/message";
import {
  deadLetterBatch,
  deadLetterInput,
  JSON_CONTENT_TYPE,
  MAX_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
  type BatchItemResult,
  type DeadLetterInput,
} from "./schema";

/** A request body as read by the route: the bytes received and the value JSON.parse made of them. */
export type JsonBody = { bytes: Buffer; value: unknown };

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
async function insert(rows: Prepared[], actor: string): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const col = <K extends keyof Prepared>(k: K) => rows.map((r) => r[k] ?? null);
  const inserted = await query<{ id: string }>(INSERT_SQL, [
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

/** Validates one item; throws the KeywardError the single route answers with. */
function prepare(input: unknown, span: PayloadSpan | undefined, body: Buffer): Prepared {
  const d = parseOrThrow(deadLetterInput, input);
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

async function knownSources(names: string[]): Promise<Set<string>> {
  const rows = await query<{ name: string }>("SELECT name FROM sources WHERE name = ANY($1::text[])", [[...new Set(names)]]);
  return new Set(rows.map((r) => r.name));
}

/**
 * For in-process callers (the CLI, tests) that hold a JavaScript value rather than request bytes: the
 * value is the source, so it is serialized once, here, and stored as that text.
 */
function bodyOf(value: unknown): JsonBody {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw KeywardError.unprocessable("invalid_request", `body cannot be serialized as JSON: ${(err as Error).message}`);
  }
  if (text === undefined) throw KeywardError.unprocessable("invalid_request", "body must be a JSON object");
  return { bytes: Buffer.from(text, "utf8"), value: JSON.parse(text) };
}

/** Stores one dead letter; resolves with its id. 422 on bad input or an unknown source, 413 on an oversize payload. */
export async function recordDeadLetter(input: DeadLetterInput | unknown, actor: string): Promise<{ id: string }> {
  return recordDeadLetterBody(bodyOf(input), actor);
}

/** recordDeadLetter for a request body as received (POST /api/v1/dead-letters). */
export async function recordDeadLetterBody(body: JsonBody, actor: string): Promise<{ id: string }> {
  const row = prepare(body.value, findPayloadSpans(body.bytes).payload, body.bytes);
  if (!(await knownSources([row.source])).has(row.source)) throw unknownSource(row.source);
  await insert([row], actor);
  return { id: row.id };
}

/** Stores up to 500 dead letters in one statement; per-item results in input order. */
export async function recordDeadLetters(body: unknown, actor: string): Promise<BatchItemResult[]> {
  return recordDeadLettersBody(bodyOf(body), actor);
}

/** recordDeadLetters for a request body as received (POST /api/v1/dead-letters/batch). */
export async function recordDeadLettersBody(body: JsonBody, actor: string): Promise<BatchItemResult[]> {
  const { items } = parseOrThrow(deadLetterBatch, body.value);
  const spans = findPayloadSpans(body.bytes).items;
  const prepared: (Prepared | BatchItemResult)[] = items.map((item, i) => {
    try {
      return prepare(item, spans[i], body.bytes);
    } catch (err) {
      if (!(err instanceof KeywardError)) throw err;
      const fields = (err.details as { fields?: { field: string }[] } | undefined)?.fields;
      // Oversize in a batch is a 422 of that item (the body as a whole was accepted).
      return { error: { code: err.code, message: err.message, ...(fields?.length === 1 ? { field: fields[0].field } : {}) } };
    }
  });
  const valid = prepared.filter((p): p is Prepared => "payload" in p);
  const known = await knownSources(valid.map((p) => p.source));
  const results = prepared.map((p): BatchItemResult => {
    if (!("payload" in p)) return p;
    if (!known.has(p.source)) {
      const e = unknownSource(p.source);
      return { error: { code: e.code, message: e.message, field: "source" } };
    }
    return { id: p.id };
  });
  await insert(valid.filter((p) => known.has(p.source)), actor);
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
  const inserted = await insert(rows, actor);
  return rows.map((r) => (inserted.has(r.id) ? r.id : null));
}
