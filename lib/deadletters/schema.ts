/**
 * Dead-letter schemas and types, shared by the routes, the in-process library, the console and the tests
 * (the console imports the types only). Validation mirrors the claim API: the same event id and type
 * rules, 422 naming each field.
 */
import { parse as parseMediaType } from "content-type";
import { z } from "zod";
import { eventId, eventType, sourceName } from "../claims/schema";
import { instant, storableText } from "../http/fields";
import { pathId, uuid } from "../http/ids";
import { CURSOR_MESSAGE, cursorParam } from "../pagination";

/**
 * A payload in the JSON envelope (POST /api/v1/dead-letters, …/batch) is at most 1 MiB (or
 * KEYWARD_MAX_PAYLOAD_BYTES when that is lower): the bytes stored and replayed (the JSON text as sent, or the
 * decoded base64). The envelope is parsed whole, so larger payloads go through the raw intake
 * (POST /api/v1/dead-letters/raw) or an inlet, which take up to KEYWARD_MAX_PAYLOAD_BYTES (25 MiB by default).
 */
export const MAX_ENVELOPE_PAYLOAD_BYTES = 1024 * 1024;
/** The letter's page (GET /api/v1/dead-letters/{id}) carries a payload whole up to this size, else its first this many bytes. */
export const PAYLOAD_PREVIEW_BYTES = 1024 * 1024;
/** A JSON payload nests at most this many arrays/objects deep (`{"a":[1]}` is 2). */
export const MAX_PAYLOAD_DEPTH = 64;
/** The error text a consumer reports, at most 4 KiB. */
export const MAX_ERROR_CHARS = 4096;
export const MAX_DEAD_LETTER_BATCH = 500;
/**
 * Request body caps: one letter (a payload of 1 MiB as base64, i.e. 4/3 larger, plus the other fields),
 * and a batch (items over 1 MiB each are refused one by one).
 */
export const MAX_SINGLE_BODY_BYTES = Math.ceil(MAX_ENVELOPE_PAYLOAD_BYTES / 3) * 4 + 32 * 1024;
export const MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024;
/** The media type of a JSON `payload` when the sender names none. */
export const JSON_CONTENT_TYPE = "application/json";

const errorText = storableText()
  .min(1, "must not be empty")
  .max(MAX_ERROR_CHARS, `must be at most ${MAX_ERROR_CHARS} characters`);


/** A Content-Type header value (RFC 9110 media type with parameters), sent as is on replay. */
export const mediaType = z
  .string()
  .max(255, "must be at most 255 characters")
  .refine((s) => {
    try {
      parseMediaType(s);
      return true;
    } catch {
      return false;
    }
  }, "must be a media type such as application/x-www-form-urlencoded or text/xml; charset=utf-8");

/** Standard base64 with padding (RFC 4648 section 4), canonical, so one string means one byte sequence. */
const base64 = z
  .string()
  .refine(
    (s) => /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0 && Buffer.from(s, "base64").toString("base64") === s,
    "must be standard base64 (A-Z a-z 0-9 + /, padded with =)",
  );

export const deadLetterInput = z
  .strictObject({
    source: sourceName,
    eventId,
    eventType,
    /** Any JSON value: stored and replayed as the exact bytes of its source text in the request. */
    payload: z.unknown().optional(),
    /** Or any bytes, as base64, replayed with `contentType` (form-encoded, XML, …). */
    payloadBase64: base64.optional(),
    /** The replay's Content-Type: required with payloadBase64, application/json by default with payload. */
    contentType: mediaType.optional(),
    error: errorText,
    attempts: z.number().int("must be a whole number").min(0).max(1_000_000).optional(),
    failedAt: instant.optional(),
    queue: storableText()
      .min(1, "must not be empty")
      .max(255, "must be at most 255 characters")
      // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
      .refine((s) => !/[\u0001-\u001f\u007f]/.test(s), "must not contain control characters") // NUL: storableText
      .optional(),
  })
  .superRefine((d, ctx) => {
    if (d.payload === undefined && d.payloadBase64 === undefined) {
      ctx.addIssue({ code: "custom", path: ["payload"], message: "is required: any JSON value (or payloadBase64 with contentType)" });
    } else if (d.payload !== undefined && d.payloadBase64 !== undefined) {
      ctx.addIssue({ code: "custom", path: ["payloadBase64"], message: "send payload or payloadBase64, not both" });
    } else if (d.payloadBase64 !== undefined && d.contentType === undefined) {
      ctx.addIssue({ code: "custom", path: ["contentType"], message: "is required with payloadBase64 (the media type to replay it with)" });
    }
  });
export type DeadLetterInput = z.input<typeof deadLetterInput>;
/** One dead letter as recordDeadLetter takes it: parsed. */
export type DeadLetterFields = z.output<typeof deadLetterInput>;

/** The batch body must be `{ items: [...] }`; each item is validated on its own. */
export const deadLetterBatch = z.strictObject({
  items: z
    .array(z.unknown())
    .min(1, "must hold at least 1 item")
    .max(MAX_DEAD_LETTER_BATCH, `must hold at most ${MAX_DEAD_LETTER_BATCH} items`),
});
export type DeadLetterBatch = z.output<typeof deadLetterBatch>;

/**
 * Where the raw intake reads an event id or type: `header:<name>` (a request header, e.g.
 * `header:X-GitHub-Delivery`) or `json:<path>` (a field of the JSON body, e.g. `json:$.id`; dot-separated
 * keys and array indexes). Pure.
 */
export type RawFrom = { kind: "header"; name: string } | { kind: "json"; path: string[] };
export function parseRawFrom(text: string): { ok: true; value: RawFrom } | { ok: false; error: string } {
  const m = /^(header|json):(.+)$/s.exec(text);
  if (!m) return { ok: false, error: "must be header:<name> (e.g. header:X-GitHub-Delivery) or json:<path> (e.g. json:$.id)" };
  if (m[1] === "header") {
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,255}$/.test(m[2])) return { ok: false, error: "header name must be an HTTP header name" };
    return { ok: true, value: { kind: "header", name: m[2].toLowerCase() } };
  }
  const path = m[2].replace(/^\$\./, "").split(".");
  // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
  if (m[2].length > 255 || path.some((p) => p === "" || /[\u0000-\u001f\u007f]/.test(p))) {
    return { ok: false, error: "json path must be dot-separated keys or indexes, e.g. json:$.data.object.id" };
  }
  return { ok: true, value: { kind: "json", path } };
}
const rawFrom = z
  .string()
  .transform((s, ctx) => {
    const r = parseRawFrom(s);
    if (!r.ok) {
      ctx.addIssue({ code: "custom", message: r.error });
      return z.NEVER;
    }
    return r.value;
  });

/** Header names: a comma-separated list (`keepHeaders=x-trace-id,x-tenant`). */
const headerNames = z
  .string()
  .max(2000, "must be at most 2000 characters")
  .transform((s, ctx) => {
    const names = s.split(",").map((n) => n.trim().toLowerCase()).filter(Boolean);
    const bad = names.find((n) => !/^[!#$%&'*+\-.^_`|~0-9a-z]{1,255}$/.test(n));
    if (bad !== undefined) {
      ctx.addIssue({ code: "custom", message: `"${bad}" is not an HTTP header name` });
      return z.NEVER;
    }
    return names;
  });

/**
 * The raw intake's fields (POST /api/v1/dead-letters/raw), each from the query string or from a
 * `Keyward-<Field>` header (`eventIdFrom` ↔ `Keyward-Event-Id-From`): the body itself is the payload.
 * The event id and type are given, or read from the request (`eventIdFrom`, `eventTypeFrom`).
 */
export const rawIntakeInput = z
  .strictObject({
    source: sourceName,
    eventId: eventId.optional(),
    eventIdFrom: rawFrom.optional(),
    eventType: eventType.optional(),
    eventTypeFrom: rawFrom.optional(),
    error: errorText,
    attempts: z.coerce.number().int("must be a whole number").min(0).max(1_000_000).optional(),
    failedAt: instant.optional(),
    queue: storableText()
      .min(1, "must not be empty")
      .max(255, "must be at most 255 characters")
      // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
      .refine((s) => !/[\u0001-\u001f\u007f]/.test(s), "must not contain control characters")
      .optional(),
    /** More sender headers to keep, besides the known delivery, event and signature headers. */
    keepHeaders: headerNames.optional(),
  })
  .superRefine((d, ctx) => {
    if ((d.eventId === undefined) === (d.eventIdFrom === undefined)) {
      ctx.addIssue({ code: "custom", path: ["eventId"], message: "give eventId, or eventIdFrom (header:<name> or json:<path>), exactly one" });
    }
    if ((d.eventType === undefined) === (d.eventTypeFrom === undefined)) {
      ctx.addIssue({ code: "custom", path: ["eventType"], message: "give eventType, or eventTypeFrom (header:<name> or json:<path>), exactly one" });
    }
  });
export type RawIntakeFields = z.output<typeof rawIntakeInput>;
/** The query string of the raw intake: the same fields, each optional here (a header may carry it). */
export const rawIntakeQuery = z.strictObject(
  Object.fromEntries(Object.keys(rawIntakeInput.shape).map((k) => [k, z.string().optional()])) as Record<
    keyof RawIntakeFields,
    z.ZodOptional<z.ZodString>
  >,
);
/** The raw intake's field ↔ header: `eventIdFrom` ↔ `keyward-event-id-from`. */
export const rawIntakeHeader = (field: string) => `keyward-${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** Where a letter from a BullMQ or NATS inlet came from (lib/inlets/kinds): for its page and its replay. */
export const letterOriginSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("bullmq"),
    queue: z.string(),
    prefix: z.string(),
    jobId: z.string(),
    name: z.string(),
    failedReason: z.string(),
    attemptsMade: z.number().int(),
    /** The job's stack traces, one per failed attempt (at most 20, each cut at 4000 characters). */
    stacktrace: z.array(z.string()),
    /** When the job was added, last processed and failed (ms since the epoch). */
    timestamp: z.number().nullable(),
    processedOn: z.number().nullable(),
    finishedOn: z.number(),
  }),
  z.object({
    kind: z.literal("nats"),
    stream: z.string(),
    consumer: z.string(),
    seq: z.number().int(),
    deliveries: z.number().int(),
    subject: z.string().nullable(),
    headers: z.array(z.tuple([z.string(), z.string()])),
    time: z.string().nullable(),
  }),
]);
export type LetterOrigin = z.infer<typeof letterOriginSchema>;

/** A sender's header kept with a raw letter. */
export const senderHeaderSchema = z.object({ name: z.string(), value: z.string() });
export type SenderHeader = z.infer<typeof senderHeaderSchema>;

/** One item's outcome in a batch: its id, or why it was refused (the one error body's fields). */
export const batchItemResultSchema = z.union([
  z.object({ id: z.string() }),
  z.object({ error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }) }),
]);
export type BatchItemResult = z.infer<typeof batchItemResultSchema>;
/** POST /api/v1/dead-letters/batch: each item's outcome, in input order. */
export const batchResultSchema = z.object({ results: z.array(batchItemResultSchema) });
/** POST /api/v1/dead-letters: the stored letter's id. */
export const recordedDeadLetterSchema = z.object({ id: uuid() });
/** POST /api/v1/dead-letters/raw: the stored letter, its event id and type as read, and its payload's type and size. */
export const recordedRawDeadLetterSchema = z.object({
  id: uuid(),
  eventId: z.string(),
  eventType: z.string(),
  contentType: z.string(),
  payloadBytes: z.number().int().nonnegative(),
});
export type RecordedRawDeadLetter = z.infer<typeof recordedRawDeadLetterSchema>;

/**
 * pending (may be replayed) · replaying (held by a running replay) · delivered (a replay delivered it) ·
 * unidentified (an inlet message without a usable event id, kept with the reason; never replayed) ·
 * discarded (an operator gave it up, with a reason) · resolved (an operator handled it outside Keyward).
 * delivered, discarded and resolved are settled: never replayed, not at risk, pruned after the retention.
 */
export const DEAD_LETTER_STATUSES = ["pending", "replaying", "delivered", "unidentified", "discarded", "resolved"] as const;
export type DeadLetterStatus = (typeof DEAD_LETTER_STATUSES)[number];

import { KEY_STATES } from "../keys/verdict";
export { KEY_STATES, type KeyStateName } from "../keys/verdict";

const uuidText = uuid();

/**
 * A letter's place in the list, by the sort it was listed in: `s` the sort, `v` its sort value (the
 * failure time, or the key's expiry in microseconds since the epoch, -1 for none), `i` its id.
 */
const deadLetterPosition = z.discriminatedUnion("s", [
  z.strictObject({ s: z.literal("failedAt"), v: instant, i: uuidText }),
  z.strictObject({ s: z.literal("keyExpiry"), v: z.string().regex(/^-?\d{1,18}$/), i: uuidText }),
]);

export const listDeadLettersQuery = z
  .strictObject({
    source: sourceName.optional(),
    from: instant.optional(),
    to: instant.optional(),
    errorContains: storableText().min(1).max(200).optional(),
    status: z.enum(DEAD_LETTER_STATUSES).optional(),
    sort: z.enum(["failedAt", "keyExpiry"]).default("failedAt"),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    cursor: cursorParam(deadLetterPosition).optional(),
  })
  // A cursor of one sort means nothing in the other.
  .refine((q) => !q.cursor || q.cursor.s === q.sort, { path: ["cursor"], message: CURSOR_MESSAGE });
export type ListDeadLettersQuery = z.infer<typeof listDeadLettersQuery>;

/** A dead letter in the list (GET /api/v1/dead-letters): times as ISO text. */
export const deadLetterSchema = z.object({
  id: uuidText,
  source: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  error: z.string(),
  attempts: z.number().int().nonnegative(),
  failedAt: instant,
  queue: z.string().nullable(),
  status: z.enum(DEAD_LETTER_STATUSES),
  receivedAt: instant,
  settledAt: instant.nullable(),
  /**
   * The event's dedup key now and `processed`: a handler took the event and did not give it back (the key
   * is alive, or the newest deciding audit row is not a release). Without a live key, a processed letter
   * is at risk: a replay could process it twice. Both decided by lib/keys/verdict.ts decideKey.
   */
  key: z.object({ state: z.enum(KEY_STATES), expiresAt: instant.nullable(), processed: z.boolean() }),
});
export type DeadLetter = z.infer<typeof deadLetterSchema>;

/**
 * One letter with its payload exactly as stored: `payloadBase64` always, `payloadText` too when the bytes
 * are valid UTF-8 (the JSON text as sent, byte for byte; never re-serialized, never parsed).
 */
export const deadLetterDetailSchema = deadLetterSchema.extend({
  contentType: z.string(),
  payloadBytes: z.number().int().nonnegative(),
  /**
   * True when the payload is larger than PAYLOAD_PREVIEW_BYTES: payloadBase64 and payloadText then hold
   * its first PAYLOAD_PREVIEW_BYTES only (payloadText cut before an incomplete character), and the whole
   * payload is at GET /api/v1/dead-letters/{id}/payload.
   */
  payloadTruncated: z.boolean(),
  /** The sender's headers a raw intake kept (delivery id, event type, signatures), as received; [] otherwise. */
  senderHeaders: z.array(senderHeaderSchema),
  /** The payload's bytes as base64 (any bytes: JSON text, a form, XML, binary). */
  payloadBase64: z.string(),
  /** The same bytes as text when they are valid UTF-8, else null: a string, whatever it holds. */
  payloadText: z.string().nullable(),
  lastReplayError: z.string().nullable(),
  /** For a letter from a RabbitMQ inlet: which inlet, and the exchange and routing key it was first published with (x-death). */
  amqp: z.object({ inletId: z.string().nullable(), exchange: z.string().nullable(), routingKey: z.string().nullable() }).nullable(),
  /** For a letter from a BullMQ or NATS inlet: the job or message it was (kinds/), else null. */
  origin: letterOriginSchema.nullable(),
  /** Why an inlet message had no usable event id (status `unidentified`), else null. */
  unidentifiedReason: z.string().nullable(),
  /** The HTTP status of the same (latest) replay attempt as lastReplayError, if it got an answer. */
  lastReplayStatus: z.number().int().nullable(),
  /** Who discarded it or marked it resolved (null otherwise), and the reason given. */
  settledBy: z.string().nullable(),
  settleReason: z.string().nullable(),
});
export type DeadLetterDetail = z.infer<typeof deadLetterDetailSchema>;

/** Dead letters per bulk request: at most this many ids… */
export const MAX_BULK_IDS = 1000;
/** …and a filter matching more than this needs `expectedCount` equal to what it matches (as a typed confirmation)… */
export const BULK_CONFIRM_ABOVE = 100;
/** …and may match at most this many (narrow it, or send several requests). */
export const MAX_BULK_FILTER = 10_000;
/** A discard's reason, at least this long (as a forced replay's). */
export const MIN_DISCARD_REASON = 10;

const bulkReason = storableText().trim().max(1000, "must be at most 1000 characters");

/** The letters a bulk action takes: by id, or every pending letter of a source matching a filter. */
const bulkSelection = {
  ids: z
    .array(uuid())
    .min(1, "must hold at least 1 id (or send a filter)")
    .max(MAX_BULK_IDS, `must hold at most ${MAX_BULK_IDS} ids`)
    .optional(),
  filter: z
    .strictObject({
      source: sourceName,
      /** Only pending letters can be discarded or resolved; `pending` may be said. */
      status: z.literal("pending", "only pending dead letters can be discarded or resolved").optional(),
      failedSince: instant.optional(),
      failedUntil: instant.optional(),
      /** Text the error contains (case-insensitive). */
      error: storableText().min(1).max(200).optional(),
    })
    .optional(),
  /** With a filter: the number of letters the operator expects it to take (required above BULK_CONFIRM_ABOVE). */
  expectedCount: z.number().int("must be a whole number").min(0).optional(),
};

const oneSelection = <T extends { ids?: unknown; filter?: unknown }>(v: T) => (v.ids === undefined) !== (v.filter === undefined);
const selectionIssue = { message: "send either ids or filter (exactly one)", path: ["ids"] };

export const discardRequest = z
  .strictObject({
    ...bulkSelection,
    reason: bulkReason.min(MIN_DISCARD_REASON, `must be at least ${MIN_DISCARD_REASON} characters: say why`),
  })
  .refine(oneSelection, selectionIssue);
export const resolveRequest = z
  .strictObject({ ...bulkSelection, reason: bulkReason.min(1, "must not be empty").optional() })
  .refine(oneSelection, selectionIssue);
export type DiscardRequest = z.output<typeof discardRequest>;
export type ResolveRequest = z.output<typeof resolveRequest>;
export type BulkRequest = DiscardRequest | ResolveRequest;

export type BulkAction = "discard" | "resolve";
/** `{ discarded: n, ids }` or `{ resolved: n, ids }`; `skipped`: ids sent that were not pending (or unknown: status null). */
export type BulkResult = ({ discarded: number } | { resolved: number }) & {
  ids: string[];
  skipped: { id: string; status: DeadLetterStatus | null }[];
};

const bulkOutcome = {
  ids: z.array(z.string()),
  skipped: z.array(z.object({ id: z.string(), status: z.enum(DEAD_LETTER_STATUSES).nullable() })),
};
/** POST /dead-letters/discard: BulkResult with `discarded`. */
export const discardResultSchema = z.object({ discarded: z.number().int().nonnegative(), ...bulkOutcome });
/** POST /dead-letters/resolve: BulkResult with `resolved`. */
export const resolveResultSchema = z.object({ resolved: z.number().int().nonnegative(), ...bulkOutcome });

const countOf = z.number().int().nonnegative();
export const deadLetterListSchema = z.object({
  items: z.array(deadLetterSchema),
  /** The cursor of the next page (lib/pagination.ts); null on the last. */
  next: z.string().nullable(),
  counts: z.object({
    total: countOf,
    bySource: z.array(z.object({ source: z.string(), count: countOf })),
    byError: z.array(z.object({ error: z.string(), count: countOf })),
    /**
     * Pending letters (within the filters) whose replay could process them twice: no live key and processed
     * by the audit history (never-processed ones are safe and not counted), and those with a key expiring within 24 h.
     */
    keyRisk: z.object({ expired: countOf, expiringSoon: countOf }),
  }),
});
export type DeadLetterList = z.infer<typeof deadLetterListSchema>;

/** /dead-letters/{id}/…: a malformed id is the same 404 as an unknown one (lib/http/ids.ts). */
export const deadLetterParams = z.strictObject({ id: pathId("dead_letter_not_found", (id) => `no dead letter ${id}`) });
