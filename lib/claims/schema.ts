/** Zod schemas for the claim API, shared by the routes, the in-process library, the CLI and the tests. */
import { z } from "zod";

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

export const claimToken = z.uuid("must be the claimToken returned by the claim");

export const claimRequest = z.strictObject({
  source: sourceName,
  eventId,
  eventType,
  payloadHash: payloadHash.optional(),
  leaseSeconds: leaseSeconds.optional(),
  attemptId: attemptId.optional(),
});
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

export const completeRequest = z.strictObject({ source: sourceName, eventId, claimToken });
export type CompleteRequest = z.input<typeof completeRequest>;

export const releaseRequest = z.strictObject({ source: sourceName, eventId, claimToken: claimToken.optional() });
export type ReleaseRequest = z.input<typeof releaseRequest>;

export const claimKeyParams = z.strictObject({ source: sourceName, eventId });

export type ClaimOutcome = "claimed" | "duplicate" | "in_flight" | "payload_mismatch";
export type ClaimStatus = "done" | "processing";

/** The answer of complete and release (server and keyward/client alike). */
export type SettleResult = {
  source: string;
  eventId: string;
  status: ClaimStatus | "released";
  firstSeenAt: string;
  expiresAt: string;
  duplicateCount: number;
};
export type ClaimKind = "claimed" | "lease_takeover" | "reclaimed_after_expiry";

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
};

/** HTTP status for each claim outcome. */
export const OUTCOME_STATUS: Record<ClaimOutcome, number> = {
  claimed: 201,
  duplicate: 200,
  in_flight: 409,
  payload_mismatch: 409,
};
