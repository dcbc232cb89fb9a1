/**
 * Zod schemas and types of the audit history's search, export and event explanation, shared by the
 * routes, the console and the tests. No server code: the console imports this file.
 */
import { z } from "zod";
import { claimStatus, eventId, eventType, sourceName } from "@/lib/claims/schema";
import { instant, isInstant, storableText } from "@/lib/http/fields";
import { cursorParam } from "@/lib/pagination";
import { KEY_STATES } from "@/lib/keys/verdict";

/**
 * The kinds Keyward writes today. The kind filter is open (any well-formed kind is accepted, so a kind a
 * newer version writes can be searched), but these are the ones offered in the console.
 */
export const KNOWN_AUDIT_KINDS = [
  "claimed",
  "lease_takeover",
  "reclaimed_after_expiry",
  "completed",
  "released",
  "dead_lettered",
  "replayed",
  "operator",
] as const;

/** Kinds that (re)create a claim on the key: their detail carries `expiresAt`. */
export const CLAIM_KINDS = ["claimed", "lease_takeover", "reclaimed_after_expiry"] as const;

export const auditKind = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,39}$/, `must be a kind such as ${KNOWN_AUDIT_KINDS.join(", ")}`);

export const DEFAULT_RANGE_DAYS = 30;
export const MAX_PAGE = 500;

const MAX_BIGINT = 2n ** 63n - 1n;
/** An audit row's time as the API writes it: UTC with microseconds. */
const ROW_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z$/;

/**
 * A row's place in the history, newest first: its exact time and id (the primary key), so a page never
 * skips or repeats a row. The cursor of the audit search and of the operator action log.
 */
export const auditPosition = z.strictObject({
  at: z.string().regex(ROW_TIME).refine(isInstant),
  // The refinement runs even when the pattern did not match (zod 4 reports every issue): it must not throw.
  id: z.string().regex(/^\d{1,19}$/).refine((id) => /^\d{1,19}$/.test(id) && BigInt(id) <= MAX_BIGINT),
});
export type AuditPosition = z.output<typeof auditPosition>;
export const auditCursor = cursorParam(auditPosition);

/** The filters common to a search and its CSV export. Everything matches exactly except eventIdPrefix. */
export const auditFilters = z.strictObject({
  source: sourceName.optional(),
  eventId: eventId.optional(),
  eventIdPrefix: eventId.optional(),
  eventType: eventType.optional(),
  kind: auditKind.optional(),
  actor: storableText().min(1).max(200).optional(),
  /** Inclusive. Default: `to` minus 30 days, or with an exact eventId, the whole audit retention. */
  from: instant.optional(),
  /** Exclusive. Default: no upper bound (now). */
  to: instant.optional(),
});

export const auditSearchQuery = auditFilters.extend({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE, `must be at most ${MAX_PAGE}`).default(100),
  cursor: auditCursor.optional(),
});

export type AuditFilters = z.infer<typeof auditFilters>;
export type AuditSearchQuery = z.infer<typeof auditSearchQuery>;

/** An audit row's time as the API writes it: UTC with microseconds. */
const rowTime = z.string().regex(ROW_TIME).refine(isInstant);
/** A bigint primary key, as text (JSON numbers stop being exact above 2^53). */
const rowId = z.string().regex(/^\d{1,19}$/);

export const auditRowSchema = z.object({
  id: rowId,
  /** ISO time with microseconds. */
  at: rowTime,
  source: z.string().nullable(),
  eventId: z.string().nullable(),
  eventType: z.string().nullable(),
  kind: z.string(),
  actor: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()).nullable(),
});
export type AuditRow = z.infer<typeof auditRowSchema>;

/** A page of rows (`next`: pass as `cursor` for the next, older page), and the time range searched, defaults filled in. */
export const auditPageSchema = z.object({
  items: z.array(auditRowSchema),
  next: z.string().nullable(),
  range: z.object({ from: instant, to: instant.nullable() }),
});
export type AuditPage = z.infer<typeof auditPageSchema>;

export const eventParams = z.strictObject({ source: sourceName, eventId });

/** The dedup key as stored now (dedup_keys), or null when there is no row. */
export type KeyRow = {
  eventType: string;
  status: "done" | "processing";
  receivedAt: string;
  expiresAt: string;
  leaseExpiresAt: string | null;
  duplicateCount: number;
  lastDuplicateAt: string | null;
};

/**
 * What became of an event's key:
 * - `alive`: the key exists and protects against duplicates until `keyExpiresAt`;
 * - `expired`: the key's TTL has passed, the pruner has not deleted it yet;
 * - `pruned`: the history shows a claim whose key expired at `keyExpiresAt` and is gone;
 * - `released`: the last thing that happened was a release (the key was deleted so a retry is processed);
 * - `missing`: the history shows a claim but the key is gone before its expiry (deleted outside Keyward);
 * - `never_seen`: no key and no history within the audit retention.
 */
export const KEY_FATES = ["alive", "expired", "pruned", "released", "missing", "never_seen"] as const;
export type KeyFate = (typeof KEY_FATES)[number];

/** A claim that processed the event again after its key had expired (lib/audit/explain.ts lateClaims). */
export const lateClaimSchema = z.object({
  firstClaimAt: instant,
  lateClaimAt: instant,
  gapSeconds: z.number().nonnegative(),
  /** The key at the late claim: expired but still stored (reclaimed_after_expiry), or already pruned. */
  keyThen: z.enum(["unpruned", "pruned"]),
  viaReplay: z.boolean(),
  /** The late claim's audit row. */
  auditId: rowId,
});
export type LateClaim = z.infer<typeof lateClaimSchema>;

export const eventExplanationSchema = z.object({
  source: z.string(),
  eventId: z.string(),
  fate: z.enum(KEY_FATES),
  /** The answer in one sentence (the key's side). */
  sentence: z.string(),
  /**
   * The whole story in one line, oldest first, when the history holds more than claims: "Processed at T1;
   * dead-lettered at T2 (timeout); replayed at T3 → delivered." (else the sentence).
   */
  headline: z.string(),
  eventType: z.string().nullable(),
  status: claimStatus.nullable(),
  /** When the latest claim was made (the delivery that was processed). */
  processedAt: instant.nullable(),
  completedAt: instant.nullable(),
  releasedAt: instant.nullable(),
  keyExpiresAt: instant.nullable(),
  leaseExpiresAt: instant.nullable(),
  firstSeenAt: instant.nullable(),
  lastSeenAt: instant.nullable(),
  /** Duplicates counted on the live key; null once the key is gone (they are not kept after it). */
  duplicateCount: z.number().int().nonnegative().nullable(),
  claims: z.number().int().nonnegative(),
  /** The key now and whether the event was processed, by lib/keys/verdict.ts decideKey (as the dead-letter list says). */
  keyState: z.enum(KEY_STATES),
  processed: z.boolean(),
  /** How many times a handler processed it: 0, 1, or more when it was claimed again after its key had expired. */
  timesProcessed: z.number().int().nonnegative(),
  /** The late duplicates in its history, oldest first (the advisor's late-duplicate list holds the same). */
  lateClaims: z.array(lateClaimSchema),
});
export type EventExplanation = z.infer<typeof eventExplanationSchema>;

/** GET /api/v1/events/{source}/{eventId}: the explanation, the audit timeline and where else the id was seen. */
export const eventAnswerSchema = eventExplanationSchema.extend({
  /** The database time the answer was computed at. */
  asOf: instant,
  retentionDays: z.number().int().positive(),
  /** Oldest first. */
  timeline: z.array(auditRowSchema),
  /** True when the event has more audit rows than the page shows (the oldest are left out). */
  timelineTruncated: z.boolean(),
  /** When this source never saw the id: the other sources that did (a key or audit history), at most 10. */
  otherSources: z.array(z.string()),
});
export type EventAnswer = z.infer<typeof eventAnswerSchema>;

/** One entry of the operator action log (GET /api/v1/actions): an `operator` audit row, unpacked. */
export const actionRecordSchema = z.object({
  id: rowId,
  at: rowTime,
  actor: z.string(),
  action: z.string(),
  outcome: z.string(),
  target: z.object({ type: z.string(), id: z.string() }).nullable(),
  source: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
});
export type ActionRecord = z.infer<typeof actionRecordSchema>;
export const actionPageSchema = z.object({ items: z.array(actionRecordSchema), next: z.string().nullable() });
export type ActionPage = z.infer<typeof actionPageSchema>;
