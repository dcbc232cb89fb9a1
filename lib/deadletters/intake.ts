/**
 * Dead-letter intake: one letter or a batch of up to 500 in the JSON envelope, a raw request body
 * (recordRawDeadLetter), or an inlet's messages (recordInletLetters); each letter written together with
 * its audit row (`dead_lettered`) by one statement, so a letter never exists without its record. A bad
 * item of a batch gets its own error and does not fail the others; results come back in input order.
 *
 * The payload is kept exactly as received: for a JSON `payload`, the bytes of its source text in the
 * request body (located by payload-spans.ts; never parsed and re-serialized, so big integers, `\/`,
 * `200.0`, whitespace and key order survive); for `payloadBase64`, the decoded bytes; for the raw intake,
 * the body (less a UTF-8 byte order mark before a JSON body). Those bytes are what a replay sends and
 * signs. Payloads over 1 MiB are staged in chunks first (payload-store.ts), so no statement carries one
 * whole and the server holds one copy.
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { randomUUID } from "node:crypto";
import { KeywardError } from "@/lib/errors";
import { database, type Db } from "@/lib/db/transaction";
import { invalidRequest } from "@/lib/http/validate";
import { unknownSource } from "@/lib/claims/claim";
import { loadEnv } from "@/lib/config/env";
import { eventId as eventIdSchema, eventType as eventTypeSchema } from "@/lib/claims/schema";
import { withoutBom } from "@/lib/http/bom";
import { findPayloadSpans, type PayloadSpan } from "./payload-spans";
import { identifierOf, readJsonPath } from "./json-path";
import { INLINE_MAX_BYTES, runAssembly, stagePayload } from "./payload-store";
import { pickSenderHeaders } from "./sender-headers";
import type { InletLetter } from "@/lib/inlets/message";
import {
  deadLetterInput,
  JSON_CONTENT_TYPE,
  MAX_ENVELOPE_PAYLOAD_BYTES,
  MAX_PAYLOAD_DEPTH,
  mediaType,
  type BatchItemResult,
  type DeadLetterBatch,
  type DeadLetterFields,
  type RawFrom,
  type RawIntakeFields,
  type RecordedRawDeadLetter,
  type SenderHeader,
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
  /** A raw intake's kept sender headers. */
  senderHeaders?: SenderHeader[] | null;
  /** Where a BullMQ or NATS inlet's letter came from (lib/inlets/kinds). */
  origin?: Record<string, unknown> | null;
};

/**
 * Raw SQL: the letters and their audit rows in one statement (an unnest batch), one round trip per request.
 * A payload staged in chunks (upload_id, payload NULL) is assembled here and its chunks deleted.
 */
const INSERT_SQL = `
WITH input AS (
  SELECT i.*, coalesce(i.inline_payload,
                       (SELECT string_agg(u.chunk, ''::bytea ORDER BY u.seq) FROM payload_uploads u WHERE u.upload_id = i.upload_id)) AS payload
  FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::bytea[], $6::text[], $7::text[], $8::int[],
              $9::timestamptz[], $10::text[], $12::uuid[], $13::text[], $14::text[], $15::text[], $16::text[],
              $17::uuid[], $18::jsonb[], $19::jsonb[])
    AS i(id, source, event_id, event_type, inline_payload, content_type, error, attempts, failed_at, queue,
         inlet_id, origin_exchange, origin_routing_key, origin_key, unidentified_reason, upload_id, sender_headers, origin)
),
staged AS (
  DELETE FROM payload_uploads WHERE upload_id IN (SELECT upload_id FROM input WHERE upload_id IS NOT NULL)
),
ins AS (
  INSERT INTO dead_letters (id, source, event_id, event_type, payload, payload_bytes, content_type, error, attempts, failed_at, queue,
                            inlet_id, origin_exchange, origin_routing_key, origin_key, unidentified_reason, status, sender_headers, origin)
  SELECT id, source, event_id, event_type, payload, length(payload), content_type, error, attempts,
         date_trunc('milliseconds', coalesce(failed_at, now())), queue,
         inlet_id, origin_exchange, origin_routing_key, origin_key, unidentified_reason,
         CASE WHEN unidentified_reason IS NULL THEN 'pending' ELSE 'unidentified' END, sender_headers, origin
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

/**
 * Inserts the rows with their audit rows in one statement; answers the ids inserted (all but skipped
 * repeats). Payloads over INLINE_MAX_BYTES are staged first, chunk by chunk.
 */
async function insert(rows: Prepared[], actor: string, db: Db): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const uploads: (string | null)[] = [];
  for (const r of rows) uploads.push(r.payload.length > INLINE_MAX_BYTES ? await stagePayload(r.payload, db) : null);
  const col = <K extends keyof Prepared>(k: K) => rows.map((r) => r[k] ?? null);
  const json = (k: "senderHeaders" | "origin") => rows.map((r) => (r[k] ? JSON.stringify(r[k]) : null));
  const values = [
    col("id"),
    col("source"),
    col("eventId"),
    col("eventType"),
    rows.map((r, i) => (uploads[i] === null ? r.payload : null)),
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
    uploads,
    json("senderHeaders"),
    json("origin"),
  ];
  const staged = rows.reduce((n, r, i) => n + (uploads[i] === null ? 0 : r.payload.length), 0);
  // Outside a caller's transaction, a statement assembling staged payloads gets time in proportion to them.
  const inserted = staged > 0 && !db.inTransaction ? await runAssembly<{ id: string }>(INSERT_SQL, values, staged) : await query(z.object({ id: z.string() }), INSERT_SQL, values, db);
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
  const max = envelopePayloadLimit();
  if (payload.length > max) {
    throw refuse(413, "payload_too_large", `must be at most ${max} bytes in the JSON envelope (it is ${payload.length}); send larger payloads to POST /api/v1/dead-letters/raw`);
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

/** The JSON envelope's payload limit: 1 MiB, or KEYWARD_MAX_PAYLOAD_BYTES when lower. */
export function envelopePayloadLimit(): number {
  return Math.min(MAX_ENVELOPE_PAYLOAD_BYTES, loadEnv().KEYWARD_MAX_PAYLOAD_BYTES);
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

/** A raw delivery as the raw intake route read it: the body's bytes, its Content-Type, the request headers. */
export type RawDelivery = { body: Buffer; contentType: string | null; headers: Iterable<[string, string]> & { get(name: string): string | null } };

const isJsonType = (type: string) => /^application\/(.+\+)?json\s*(;|$)/i.test(type);

/**
 * Stores a raw delivery as one dead letter (POST /api/v1/dead-letters/raw): the body byte for byte with its
 * Content-Type (application/octet-stream when it has none; a UTF-8 byte order mark before a JSON body is
 * dropped), the event id and type given or read from a header or a JSON path of the body, the sender's
 * headers worth keeping. 422 naming the field for what cannot be read or used; the size limit is the
 * route's (KEYWARD_MAX_PAYLOAD_BYTES). Answers the letter's id and what was read.
 */
export async function recordRawDeadLetter(
  fields: RawIntakeFields,
  delivery: RawDelivery,
  actor: string,
  db: Db = database(),
): Promise<RecordedRawDeadLetter> {
  const refuse = (field: string, message: string) =>
    KeywardError.unprocessable("invalid_request", `invalid request: ${field}: ${message}`, { fields: [{ field, message }] });
  const contentType = delivery.contentType ?? "application/octet-stream";
  if (!mediaType.safeParse(contentType).success) throw refuse("content-type", "must be a media type such as application/json");
  const payload = isJsonType(contentType) ? withoutBom(delivery.body) : delivery.body;

  const read = (from: RawFrom, field: "eventIdFrom" | "eventTypeFrom", schema: typeof eventIdSchema): string => {
    const where = from.kind === "header" ? `header ${from.name}` : `json:${from.path.join(".")}`;
    let text: string;
    if (from.kind === "header") {
      const v = delivery.headers.get(from.name);
      if (v === null || v === "") throw refuse(field, `the request has no ${from.name} header`);
      text = v;
    } else {
      const found = readJsonPath(payload, from.path);
      if (!found.ok) throw refuse(field, found.reason === "not_json" ? `the body is not JSON, so ${where} cannot be read` : `the JSON body has no ${from.path.join(".")}`);
      const id = identifierOf(found.value, where);
      if (!id.ok) throw refuse(field, id.reason);
      text = id.id;
    }
    const valid = schema.safeParse(text);
    if (!valid.success) throw refuse(field, `the value at ${where} is not usable: ${valid.error.issues[0].message}`);
    return valid.data;
  };
  const eventId = fields.eventId ?? read(fields.eventIdFrom!, "eventIdFrom", eventIdSchema);
  const eventType = fields.eventType ?? read(fields.eventTypeFrom!, "eventTypeFrom", eventTypeSchema);
  if (!(await knownSources([fields.source], db)).has(fields.source)) throw unknownSource(fields.source);
  const row: Prepared = {
    id: randomUUID(),
    source: fields.source,
    eventId,
    eventType,
    payload,
    contentType,
    error: fields.error,
    attempts: fields.attempts ?? 0,
    failedAt: fields.failedAt ?? null,
    queue: fields.queue ?? null,
    senderHeaders: pickSenderHeaders(delivery.headers, fields.keepHeaders),
  };
  await insert([row], actor, db);
  return { id: row.id, eventId, eventType, contentType, payloadBytes: payload.length };
}
