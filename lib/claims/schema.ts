/** Zod schemas for the claim API, shared by the routes, the in-process library, the CLI and the tests. */
import { z } from "zod";
import { instant } from "../http/fields";
import { uuid } from "../http/ids";

// eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;
// A lone UTF-16 surrogate cannot be stored as UTF-8: PostgreSQL would receive U+FFFD instead, and the
// stored id would no longer be the id that was claimed.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// A blank id ("   ") is refused too: no sender means it, and " " and "  " would be two different keys.
const text = (max: number) =>
  z
    .string()
    .min(1, "must not be empty")
    .max(max, `must be at most ${max} characters`)
    .refine((s) => !CONTROL_CHARS.test(s), "must not contain control characters")
    .refine((s) => !LONE_SURROGATE.test(s), "must be valid Unicode (no lone surrogates)")
    .refine((s) => s === "" || s.trim() !== "" || CONTROL_CHARS.test(s), "must not be blank (only whitespace)");

export const sourceName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, "must match ^[a-z0-9][a-z0-9_-]{0,63}$ (lowercase letters, digits, _ and -)");

export const eventId = text(255);

export const eventType = text(128);

export const payloadHash = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, "must be 64 hexadecimal characters (a SHA-256)")
  .transform((s) => s.toLowerCase());

export const leaseSeconds = z.number().int("must be a whole number of seconds").min(1).max(86400);

/**
 * A client-chosen id of one claim attempt: the retry of a request whose answer was lost carries the same
 * one and gets the original `claimed` answer back (`repeat: true`). Printable ASCII, no spaces, e.g. a UUID.
 */
export const attemptId = z
  .string()
  .regex(/^[\x21-\x7e]{1,128}$/, "must be 1 to 128 printable ASCII characters without spaces (e.g. a UUID)");

export const claimToken = uuid("must be the claimToken returned by the claim");

export const claimRequest = z.strictObject({
  source: sourceName,
  eventId,
  eventType,
  payloadHash: payloadHash.optional(),
  leaseSeconds: leaseSeconds.optional(),
  attemptId: attemptId.optional(),
});
/** A claim as a caller sends it (keyward/client); ParsedClaimRequest as the library takes it. */
export type ClaimRequest = z.input<typeof claimRequest>;
export type ParsedClaimRequest = z.output<typeof claimRequest>;

export const MAX_BATCH = 1000;

export const batchEvent = z.strictObject({ eventId, eventType, payloadHash: payloadHash.optional(), attemptId: attemptId.optional() });

export const batchClaimRequest = z.strictObject({
  source: sourceName,
  events: z.array(batchEvent).min(1, "must hold at least 1 event").max(MAX_BATCH, `must hold at most ${MAX_BATCH} events`),
  leaseSeconds: leaseSeconds.optional(),
  /** The attempt id of every event that does not carry its own. */
  attemptId: attemptId.optional(),
});
export type BatchClaimRequest = z.input<typeof batchClaimRequest>;
export type ParsedBatchClaimRequest = z.output<typeof batchClaimRequest>;

/**
 * A result to keep with a completed key (README "Saved results"): what the handler answered, returned to
 * every duplicate claim of the key while it lives. The body travels as base64 (any bytes, unchanged); its
 * decoded size is checked against KEYWARD_RESULT_MAX_BYTES by the library (lib/claims/settle.ts).
 */
export const MAX_RESULT_HEADERS = 16;
/** Headers that describe a connection or the message framing, not the answer: never saved. */
export const UNSAVED_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "upgrade", "proxy-connection", "te", "trailer"]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]{1,64}$/;

export const savedResultInput = z.strictObject({
  status: z.number().int("must be a whole number").min(200, "must be an HTTP status from 200 to 599").max(599, "must be an HTTP status from 200 to 599"),
  headers: z
    .record(
      z.string(),
      z
        .string()
        .max(1024, "header values must be at most 1024 characters")
        .regex(/^[\t\x20-\x7e\x80-\xff]*$/, "header values must not contain control characters"),
    )
    .superRefine((h, ctx) => {
      const names = Object.keys(h);
      if (names.length > MAX_RESULT_HEADERS) ctx.addIssue({ code: "custom", message: `must hold at most ${MAX_RESULT_HEADERS} headers` });
      for (const name of names) {
        const n = name.toLowerCase();
        if (!HEADER_NAME.test(n)) ctx.addIssue({ code: "custom", path: [name], message: "header names must be HTTP tokens of 1 to 64 characters" });
        else if (UNSAVED_HEADERS.has(n)) ctx.addIssue({ code: "custom", path: [name], message: "connection and framing headers (content-length, transfer-encoding, …) are not saved" });
      }
    })
    .transform((h) => Object.fromEntries(Object.entries(h).map(([n, v]) => [n.toLowerCase(), v])))
    .default({}),
  bodyBase64: z
    .string()
    .regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, "must be base64 (RFC 4648, with padding)")
    .default(""),
});
export type SavedResultInput = z.input<typeof savedResultInput>;

/** A saved result as a duplicate claim answers it. */
export type SavedResult = { status: number; headers: Record<string, string>; bodyBase64: string };

export const completeRequest = z.strictObject({
  source: sourceName,
  eventId,
  claimToken,
  /** Opt-in per call, and only for a source with saveResults on: 422 otherwise (nothing changed). */
  result: savedResultInput.optional(),
});
export type CompleteRequest = z.input<typeof completeRequest>;
export type ParsedCompleteRequest = z.output<typeof completeRequest>;

/** Extends a running lease: the claim's token, and the lease's new length from now. */
export const extendRequest = z.strictObject({ source: sourceName, eventId, claimToken, leaseSeconds });
export type ExtendRequest = z.input<typeof extendRequest>;
export type ParsedExtendRequest = z.output<typeof extendRequest>;

export const releaseRequest = z.strictObject({ source: sourceName, eventId, claimToken: claimToken.optional() });
export type ReleaseRequest = z.input<typeof releaseRequest>;
export type ParsedReleaseRequest = z.output<typeof releaseRequest>;

export const claimKeyParams = z.strictObject({ source: sourceName, eventId });
export type ClaimKey = z.output<typeof claimKeyParams>;

/** A claim's answer; a stored key's status: declared once, for the API's schemas and the statements' rows alike. */
export const claimOutcome = z.enum(["claimed", "duplicate", "in_flight", "payload_mismatch"]);
export type ClaimOutcome = z.output<typeof claimOutcome>;
export const claimStatus = z.enum(["done", "processing"]);
export type ClaimStatus = z.output<typeof claimStatus>;

/** The answer of complete and release (server and keyward/client alike). */
export type SettleResult = {
  source: string;
  eventId: string;
  status: ClaimStatus | "released";
  firstSeenAt: string;
  expiresAt: string;
  duplicateCount: number;
  /** complete only: whether the key holds a saved result (this call's, or a first call's when this one repeats it). */
  resultSaved?: boolean;
};

/** The answer of complete and release, for the API description. */
export const settleResultSchema = z.object({
  source: z.string(),
  eventId: z.string(),
  status: z.enum(["done", "processing", "released"]),
  firstSeenAt: instant,
  expiresAt: instant,
  duplicateCount: z.number().int(),
  resultSaved: z.boolean().optional(),
}) satisfies z.ZodType<SettleResult>;

/** The answer of extend: the lease's new end (database clock). */
export type ExtendResult = {
  source: string;
  eventId: string;
  status: "processing";
  leaseExpiresAt: string;
  expiresAt: string;
  firstSeenAt: string;
  duplicateCount: number;
};
export const claimKind = z.enum(["claimed", "lease_takeover", "reclaimed_after_expiry"]);
export type ClaimKind = z.output<typeof claimKind>;

/** What every claim answer carries (dates as ISO 8601 strings in JSON). */
export type ClaimResult = {
  outcome: ClaimOutcome;
  source: string;
  eventId: string;
  status: ClaimStatus;
  firstSeenAt: string;
  expiresAt: string;
  duplicateCount: number;
  /** Only on `claimed`: how this claim came about. */
  claimKind?: ClaimKind;
  /** Only on `claimed`: the token that completes or releases this claim. */
  claimToken?: string;
  /** Only on `claimed` with a lease, and on `in_flight`. */
  leaseExpiresAt?: string;
  /**
   * Only on `claimed`, and only when this request carried the attemptId of the claim that made it: the
   * answer of an earlier request whose answer was lost, returned again (nothing was changed or counted).
   */
  repeat?: true;
  /**
   * Only on `duplicate` of a single-event claim: the result the claim that processed the event saved with
   * `complete`. A batch answers `resultSaved: true` instead (a batch of duplicates could otherwise carry up
   * to 1000 results).
   */
  result?: SavedResult;
  /** Only on `duplicate` in a batch answer: the key holds a saved result (claim the event alone to get it). */
  resultSaved?: true;
};

export type KeyState = {
  state: "alive" | "expired" | "unknown";
  source: string;
  eventId: string;
  eventType?: string;
  status?: ClaimStatus;
  firstSeenAt?: string;
  expiresAt?: string;
  secondsLeft?: number;
  duplicateCount?: number;
  lastDuplicateAt?: string | null;
  leaseExpiresAt?: string | null;
  /** Whether `complete` saved a result with the key. */
  resultSaved?: boolean;
};

/** HTTP status for each claim outcome. */
export const OUTCOME_STATUS: Record<ClaimOutcome, number> = {
  claimed: 201,
  duplicate: 200,
  in_flight: 409,
  payload_mismatch: 409,
};

/** ExtendResult, for the API description. */
export const extendResultSchema = z.object({
  source: z.string(),
  eventId: z.string(),
  status: z.literal("processing"),
  leaseExpiresAt: instant,
  expiresAt: instant,
  firstSeenAt: instant,
  duplicateCount: z.number().int(),
}) satisfies z.ZodType<ExtendResult>;

/** SavedResult, for the response schemas. */
const savedResultSchema = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  bodyBase64: z.string(),
}) satisfies z.ZodType<SavedResult>;

/** A claim's answer (POST /claims with 201, 200 or 409 by outcome; each item of a batch's `results`). */
export const claimResultSchema = z.object({
  outcome: claimOutcome,
  source: z.string(),
  eventId: z.string(),
  status: claimStatus,
  firstSeenAt: instant,
  expiresAt: instant,
  duplicateCount: z.number().int(),
  claimKind: claimKind.optional(),
  claimToken: z.string().optional(),
  leaseExpiresAt: instant.optional(),
  repeat: z.literal(true).optional(),
  result: savedResultSchema.optional(),
  resultSaved: z.literal(true).optional(),
}) satisfies z.ZodType<ClaimResult>;

/** POST /claims/batch: each event's claim answer, in input order. */
export const batchClaimResultSchema = z.object({ results: z.array(claimResultSchema) });

/** GET /claims/{source}/{eventId}: the key's state now. */
export const keyStateSchema = z.object({
  state: z.enum(["alive", "expired", "unknown"]),
  source: z.string(),
  eventId: z.string(),
  eventType: z.string().optional(),
  status: claimStatus.optional(),
  firstSeenAt: instant.optional(),
  expiresAt: instant.optional(),
  secondsLeft: z.number().optional(),
  duplicateCount: z.number().int().optional(),
  lastDuplicateAt: instant.nullable().optional(),
  leaseExpiresAt: instant.nullable().optional(),
  resultSaved: z.boolean().optional(),
}) satisfies z.ZodType<KeyState>;
