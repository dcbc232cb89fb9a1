/**
 * Dead-letter schemas and types, shared by the routes, the in-process library, the console and the tests
 * (the console imports the types only). Validation mirrors the claim API: the same event id and type
 * rules, 422 naming each field.
 */
import { parse as parseMediaType } from "content-type";
import { z } from "zod";
import { eventId, eventType, sourceName } from "../claims/schema";
import { instant, storableText } from "../http/fields";
import { CURSOR_MESSAGE, cursorParam } from "../pagination";

/** A payload is at most 256 KiB: the bytes stored and replayed (the JSON text as sent, or the decoded base64). */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** A JSON payload nests at most this many arrays/objects deep (`{"a":[1]}` is 2). */
export const MAX_PAYLOAD_DEPTH = 64;
/** The error text a consumer reports, at most 4 KiB. */
export const MAX_ERROR_CHARS = 4096;
export const MAX_DEAD_LETTER_BATCH = 500;
/**
 * Request body caps: one letter (a payload of 256 KiB as base64, i.e. 4/3 larger, plus the other fields),
 * and a batch (items over 256 KiB each are refused one by one).
 */
export const MAX_SINGLE_BODY_BYTES = Math.ceil(MAX_PAYLOAD_BYTES / 3) * 4 + 32 * 1024;
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

export type BatchItemResult = { id: string } | { error: { code: string; message: string; field?: string } };

/**
 * pending (may be replayed) · replaying (held by a running replay) · delivered (a replay delivered it) ·
 * unidentified (an inlet message without a usable event id, kept with the reason; never replayed) ·
 * discarded (an operator gave it up, with a reason) · resolved (an operator handled it outside Keyward).
 * delivered, discarded and resolved are settled: never replayed, not at risk, pruned after the retention.
 */
export const DEAD_LETTER_STATUSES = ["pending", "replaying", "delivered", "unidentified", "discarded", "resolved"] as const;
export type DeadLetterStatus = (typeof DEAD_LETTER_STATUSES)[number];

export const KEY_STATES = ["alive", "in_flight", "expired", "none"] as const;
export type KeyStateName = (typeof KEY_STATES)[number];

const uuidText = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);

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

export type DeadLetter = {
  id: string;
  source: string;
  eventId: string;
  eventType: string;
  error: string;
  attempts: number;
  failedAt: string;
  queue: string | null;
  status: DeadLetterStatus;
  receivedAt: string;
  settledAt: string | null;
  /**
   * The event's dedup key now; `processed`: without a live key, whether the audit history says the event
   * was processed (a replay could then process it twice); false while a key lives.
   */
  key: { state: KeyStateName; expiresAt: string | null; processed: boolean };
};

/**
 * One letter with its payload exactly as stored: `payloadBase64` always, `payloadText` too when the bytes
 * are valid UTF-8 (the JSON text as sent, byte for byte; never re-serialized).
 */
export type DeadLetterDetail = DeadLetter & {
  contentType: string;
  payloadBytes: number;
  payloadBase64: string;
  payloadText: string | null;
  lastReplayError: string | null;
  /** For a letter from a RabbitMQ inlet: which inlet, and the exchange and routing key it was first published with (x-death). */
  amqp: { inletId: string | null; exchange: string | null; routingKey: string | null } | null;
  /** Why an inlet message had no usable event id (status `unidentified`), else null. */
  unidentifiedReason: string | null;
  /** The HTTP status of the same (latest) replay attempt as lastReplayError, if it got an answer. */
  lastReplayStatus: number | null;
  /** Who discarded it or marked it resolved (null otherwise), and the reason given. */
  settledBy: string | null;
  settleReason: string | null;
};

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
    .array(z.uuid("must be an id from this API"))
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

export type DeadLetterList = {
  items: DeadLetter[];
  /** The cursor of the next page (lib/pagination.ts); null on the last. */
  next: string | null;
  counts: {
    total: number;
    bySource: { source: string; count: number }[];
    byError: { error: string; count: number }[];
    /**
     * Pending letters (within the filters) whose replay could process them twice: no live key and processed
     * by the audit history (never-processed ones are safe and not counted), and those with a key expiring within 24 h.
     */
    keyRisk: { expired: number; expiringSoon: number };
  };
};
