/**
 * Dead-letter intake: one letter or a batch of up to 500, each written together with its audit row
 * (`dead_lettered`) by one statement, so a letter never exists without its record. A bad item of a batch
 * gets its own error and does not fail the others; results come back in input order.
 */
import { randomUUID } from "node:crypto";
import { KeywardError } from "../errors";
import { query } from "../db/sql";
import { parseOrThrow } from "../http/validate";
import { unknownSource } from "../claims/claim";
import {
  deadLetterBatch,
  deadLetterInput,
  serializePayload,
  type BatchItemResult,
  type DeadLetterInput,
} from "./schema";

type Prepared = {
  id: string;
  source: string;
  eventId: string;
  eventType: string;
  payload: string;
  payloadBytes: number;
  error: string;
  attempts: number;
  failedAt: string | null;
  queue: string | null;
};

const INSERT_SQL = `
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::int[],
                       $9::timestamptz[], $10::text[])
    AS i(id, source, event_id, event_type, payload, payload_bytes, error, attempts, failed_at, queue)
),
ins AS (
  INSERT INTO dead_letters (id, source, event_id, event_type, payload, payload_bytes, error, attempts, failed_at, queue)
  SELECT id, source, event_id, event_type, payload::json, payload_bytes, error, attempts,
         date_trunc('milliseconds', coalesce(failed_at, now())), queue
  FROM input
  RETURNING id, source, event_id, event_type, attempts, queue, error, failed_at
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT source, event_id, event_type, 'dead_lettered', $11,
         jsonb_strip_nulls(jsonb_build_object('deadLetterId', id, 'attempts', attempts, 'queue', queue,
                                              'failedAt', failed_at, 'error', left(error, 500)))
  FROM ins
)
SELECT id FROM ins`;

async function insert(rows: Prepared[], actor: string): Promise<void> {
  if (rows.length === 0) return;
  const col = <K extends keyof Prepared>(k: K) => rows.map((r) => r[k]);
  await query(INSERT_SQL, [
    col("id"),
    col("source"),
    col("eventId"),
    col("eventType"),
    col("payload"),
    col("payloadBytes"),
    col("error"),
    col("attempts"),
    col("failedAt"),
    col("queue"),
    actor,
  ]);
}

/** Validates one item; throws the KeywardError the single route answers with. */
function prepare(input: unknown): Prepared {
  const d = parseOrThrow(deadLetterInput, input);
  const serialized = serializePayload(d.payload);
  if ("problem" in serialized) {
    const tooBig = serialized.problem.includes("at most");
    throw new KeywardError(tooBig ? 413 : 422, tooBig ? "payload_too_large" : "invalid_request", serialized.problem, {
      fields: [{ field: "payload", message: serialized.problem }],
    });
  }
  return {
    id: randomUUID(),
    source: d.source,
    eventId: d.eventId,
    eventType: d.eventType,
    payload: serialized.text,
    payloadBytes: serialized.bytes,
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

/** Stores one dead letter; resolves with its id. 422 on bad input or an unknown source, 413 on an oversize payload. */
export async function recordDeadLetter(input: DeadLetterInput | unknown, actor: string): Promise<{ id: string }> {
  const row = prepare(input);
  if (!(await knownSources([row.source])).has(row.source)) throw unknownSource(row.source);
  await insert([row], actor);
  return { id: row.id };
}

/** Stores up to 500 dead letters in one statement; per-item results in input order. */
export async function recordDeadLetters(body: unknown, actor: string): Promise<BatchItemResult[]> {
  const { items } = parseOrThrow(deadLetterBatch, body);
  const prepared: (Prepared | BatchItemResult)[] = items.map((item) => {
    try {
      return prepare(item);
    } catch (err) {
      if (!(err instanceof KeywardError)) throw err;
      const fields = (err.details as { fields?: { field: string }[] } | undefined)?.fields;
      // Oversize in a batch is a 422 of that item (the body as a whole was accepted).
      const code = err.code === "payload_too_large" ? "payload_too_large" : err.code;
      return { error: { code, message: err.message, ...(fields?.length === 1 ? { field: fields[0].field } : {}) } };
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
