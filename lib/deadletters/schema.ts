/**
 * Dead-letter schemas and types, shared by the routes, the in-process library, the console and the tests
 * (the console imports the types only). Validation mirrors the claim API: the same event id and type
 * rules, 422 naming each field.
 */
import { z } from "zod";
import { eventId, eventType, sourceName } from "../claims/schema";
import { instant, storableText } from "../http/fields";

/** A payload is at most 256 KiB once serialized as JSON. */
export const MAX_PAYLOAD_BYTES = 256 * 1024;
/** The error text a consumer reports, at most 4 KiB. */
export const MAX_ERROR_CHARS = 4096;
export const MAX_DEAD_LETTER_BATCH = 500;
/** Request body caps: one letter (payload + the other fields), and a batch (items over 256 KiB each are refused one by one). */
export const MAX_SINGLE_BODY_BYTES = MAX_PAYLOAD_BYTES + 16 * 1024;
export const MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024;

// In JSON text, a NUL (\u0000) or a lone surrogate (JSON.stringify writes both as \uXXXX escapes; a valid
// pair is written raw) cannot be stored by PostgreSQL's jsonb. Preceded by an even number of backslashes,
// the escape is real (not an escaped backslash followed by "u0000").
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/** The serialized payload and its size in bytes, or a reason it cannot be stored. */
export function serializePayload(payload: unknown): { text: string; bytes: number } | { problem: string } {
  if (payload === undefined) return { problem: "payload is required (any JSON value)" };
  const text = JSON.stringify(payload);
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_PAYLOAD_BYTES) return { problem: `payload must be at most ${MAX_PAYLOAD_BYTES} bytes serialized (it is ${bytes})` };
  if (UNSTORABLE_ESCAPE.test(text)) return { problem: "payload strings must not contain NUL (\\u0000) or lone surrogates" };
  return { text, bytes };
}

const errorText = storableText()
  .min(1, "must not be empty")
  .max(MAX_ERROR_CHARS, `must be at most ${MAX_ERROR_CHARS} characters`);


export const deadLetterInput = z.strictObject({
  source: sourceName,
  eventId,
  eventType,
  payload: z.unknown(),
  error: errorText,
  attempts: z.number().int("must be a whole number").min(0).max(1_000_000).optional(),
  failedAt: instant.optional(),
  queue: storableText()
    .min(1, "must not be empty")
    .max(255, "must be at most 255 characters")
    .refine((s) => !/[\u0001-\u001f\u007f]/.test(s), "must not contain control characters") // NUL: storableText
    .optional(),
});
export type DeadLetterInput = z.input<typeof deadLetterInput>;

/** The batch body must be `{ items: [...] }`; each item is validated on its own. */
export const deadLetterBatch = z.strictObject({
  items: z
    .array(z.unknown())
    .min(1, "must hold at least 1 item")
    .max(MAX_DEAD_LETTER_BATCH, `must hold at most ${MAX_DEAD_LETTER_BATCH} items`),
});

export type BatchItemResult = { id: string } | { error: { code: string; message: string; field?: string } };

export const DEAD_LETTER_STATUSES = ["pending", "replaying", "delivered"] as const;
export type DeadLetterStatus = (typeof DEAD_LETTER_STATUSES)[number];

export const KEY_STATES = ["alive", "in_flight", "expired", "none"] as const;
export type KeyStateName = (typeof KEY_STATES)[number];

export const listDeadLettersQuery = z.strictObject({
  source: sourceName.optional(),
  from: instant.optional(),
  to: instant.optional(),
  errorContains: storableText().min(1).max(200).optional(),
  status: z.enum(DEAD_LETTER_STATUSES).optional(),
  sort: z.enum(["failedAt", "keyExpiry"]).default("failedAt"),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z.string().max(200).optional(),
});
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
  key: { state: KeyStateName; expiresAt: string | null };
};

export type DeadLetterDetail = DeadLetter & { payload: unknown; lastReplayError: string | null };

export type DeadLetterList = {
  items: DeadLetter[];
  nextCursor: string | null;
  counts: {
    total: number;
    bySource: { source: string; count: number }[];
    byError: { error: string; count: number }[];
    /** Pending letters (within the filters) with no live key, and with a key expiring within 24 h. */
    keyRisk: { expired: number; expiringSoon: number };
  };
};
