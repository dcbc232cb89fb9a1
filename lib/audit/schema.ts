/**
 * Zod schemas and types of the audit history's search, export and event explanation, shared by the
 * routes, the console and the tests. No server code: the console imports this file.
 */
import { z } from "zod";
import { eventId, eventType, sourceName } from "../claims/schema";
import { instant, isInstant, storableText } from "../http/fields";
import { cursorParam, type Page } from "../pagination";

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
  id: z.string().regex(/^\d{1,19}$/).refine((id) => BigInt(id) <= MAX_BIGINT),
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

export type AuditRow = {
  id: string;
  /** ISO time with microseconds. */
  at: string;
  source: string | null;
  eventId: string | null;
  eventType: string | null;
  kind: string;
  actor: string | null;
  detail: Record<string, unknown> | null;
};

/** A page of rows (`next`: pass as `cursor` for the next, older page), and the time range searched, defaults filled in. */
export type AuditPage = Page<AuditRow> & { range: { from: string; to: string | null } };

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
export type KeyFate = "alive" | "expired" | "pruned" | "released" | "missing" | "never_seen";

export type EventExplanation = {
  source: string;
  eventId: string;
  fate: KeyFate;
  /** The answer in one sentence (the key's side). */
  sentence: string;
  /**
   * The whole story in one line, oldest first, when the history holds more than claims: "Processed at T1;
   * dead-lettered at T2 (timeout); replayed at T3 → delivered." (else the sentence).
   */
  headline: string;
  eventType: string | null;
  status: "done" | "processing" | null;
  /** When the latest claim was made (the delivery that was processed). */
  processedAt: string | null;
  completedAt: string | null;
  releasedAt: string | null;
  keyExpiresAt: string | null;
  leaseExpiresAt: string | null;
  firstSeenAt: string | null;
  lastSeenAt: string | null;
  /** Duplicates counted on the live key; null once the key is gone (they are not kept after it). */
  duplicateCount: number | null;
  claims: number;
};

export type EventAnswer = EventExplanation & {
  /** The database time the answer was computed at. */
  asOf: string;
  retentionDays: number;
  /** Oldest first. */
  timeline: AuditRow[];
  /** True when the event has more audit rows than the page shows (the oldest are left out). */
  timelineTruncated: boolean;
  /** When this source never saw the id: the other sources that did (a key or audit history), at most 10. */
  otherSources: string[];
};
