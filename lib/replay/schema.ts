/**
 * Replay schemas and types (preflight, replays, per-item results), shared by the routes, the executor,
 * the console (type-only imports) and the tests. The contract: /work/notes/replay-contract.md and
 * docs/replay.md.
 */
import { z } from "zod";
import { sourceName } from "../claims/schema";
import { instant, storableText } from "../http/fields";
import { cursorParam } from "../pagination";
import type { ReplayHealth } from "./health";

export const CATEGORIES = ["alive", "expiring", "expired_processed", "never_processed", "in_flight"] as const;
export const category = z.enum(CATEGORIES);
export type Category = (typeof CATEGORIES)[number];

export const MAX_PREFLIGHT_ITEMS = 5000;
/** A preflight may be used to start a replay for this long after it was made. */
export const PREFLIGHT_VALID_SECONDS = 15 * 60;
export const MAX_WINDOW_SECONDS = 90 * 86400;

const uuid = z.uuid("must be an id from this API");

export const preflightRequest = z
  .strictObject({
    source: sourceName,
    deadLetterIds: z
      .array(uuid)
      .min(1, "must hold at least 1 id (or send a filter)")
      .max(MAX_PREFLIGHT_ITEMS, `must hold at most ${MAX_PREFLIGHT_ITEMS} ids`)
      .optional(),
    filter: z
      .strictObject({ from: instant.optional(), to: instant.optional(), errorContains: storableText().min(1).max(200).optional() })
      .optional(),
    replayWindowSeconds: z
      .number()
      .int("must be a whole number of seconds")
      .min(0, "must not be negative")
      .max(MAX_WINDOW_SECONDS, `must be at most ${MAX_WINDOW_SECONDS} seconds (90 days)`)
      .optional(),
  })
  .refine((v) => !(v.deadLetterIds && v.filter), { message: "send either deadLetterIds or filter, not both", path: ["filter"] });
export type PreflightRequest = z.input<typeof preflightRequest>;
/** Which pending dead letters a preflight classifies, parsed. */
export type PreflightSelection = z.output<typeof preflightRequest>;

export type PreflightItem = {
  deadLetterId: string;
  eventId: string;
  eventType: string;
  category: Category;
  keyExpiresAt: string | null;
  processedAt: string | null;
  reason: string;
};

export type PreflightCounts = Record<Category, number> & { total: number };

export type Preflight = {
  preflightId: string;
  source: string;
  createdAt: string;
  validUntil: string;
  windowSeconds: number;
  extendedAt: string | null;
  /** True when the filter selected more than MAX_PREFLIGHT_ITEMS pending letters (the oldest failures were taken). */
  truncated: boolean;
  /** The finished replay whose failed items this preflight retries (POST /api/v1/replays/{id}/retry-failed), else null. */
  retryOf: string | null;
  counts: PreflightCounts;
  items: PreflightItem[];
};

export const MAX_RATE_PER_SECOND = 500;
export const DEFAULT_RATE_PER_SECOND = 50;
export const MAX_CONCURRENCY = 32;
export const DEFAULT_CONCURRENCY = 4;
/** A forced replay (one that includes expired_processed) says why in at least this many characters. */
export const MIN_FORCE_REASON = 10;

export const startReplayRequest = z.strictObject({
  preflightId: uuid,
  include: z.array(category).min(1, "must name at least one category"),
  force: z.strictObject({ reason: storableText().trim().min(MIN_FORCE_REASON, `must be at least ${MIN_FORCE_REASON} characters: say why`).max(1000) }).optional(),
  ratePerSecond: z.number().int().min(1).max(MAX_RATE_PER_SECOND).default(DEFAULT_RATE_PER_SECOND),
  concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).default(DEFAULT_CONCURRENCY),
});
export type StartReplayRequest = z.input<typeof startReplayRequest>;
export type ReplayRequest = z.output<typeof startReplayRequest>;

export const idempotencyKey = z
  .string()
  .min(1, "the Idempotency-Key header is required (1–255 characters)")
  .max(255, "the Idempotency-Key header must be at most 255 characters");

/** POST /api/v1/replays's header: the Idempotency-Key (a missing header reads as empty, and is refused). */
export const startReplayHeaders = z.object({ "idempotency-key": z.string().default("").pipe(idempotencyKey) });

export const REPLAY_STATUSES = ["running", "paused", "cancelled", "completed"] as const;
export type ReplayStatus = (typeof REPLAY_STATUSES)[number];

export const OUTCOMES = ["pending", "delivering", "delivered", "failed", "skipped_unsafe", "cancelled"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** A replay's place in the list: its creation time (to the millisecond) and id. */
const replayPosition = z.strictObject({ at: instant, id: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i) });

export const listReplaysQuery = z.strictObject({
  source: sourceName.optional(),
  status: z.enum(REPLAY_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: cursorParam(replayPosition).optional(),
});
export type ListReplaysQuery = z.output<typeof listReplaysQuery>;

/** An attempt's place in a dead letter's attempt list: its time (written from the executor's clock, to the millisecond) and id. */
const attemptPosition = z.strictObject({ at: instant, id: z.string().regex(/^\d{1,19}$/) });

/** GET /api/v1/dead-letters/{id}/attempts's query. */
export const listAttemptsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: cursorParam(attemptPosition).optional(),
});
export type ListAttemptsQuery = z.output<typeof listAttemptsQuery>;

export type ReplaySummary = {
  id: string;
  source: string;
  status: ReplayStatus;
  preflightId: string;
  include: Category[];
  forced: boolean;
  forceReason: string | null;
  ratePerSecond: number;
  concurrency: number;
  createdBy: string;
  createdAt: string;
  finishedAt: string | null;
  total: number;
  /** Where the executor sends this replay's items now (the source's destination, read at each batch); null before its first batch. */
  destination: string | null;
  counts: Record<Outcome, number>;
  /** ok, stalled or failing, computed when read (lib/replay/health.ts), with the latest failure. */
  health: ReplayHealth;
};

export type ReplayItemResult = {
  deadLetterId: string;
  eventId: string;
  outcome: Outcome;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  finishedAt: string | null;
};

export type Replay = ReplaySummary & { failures: ReplayItemResult[]; items: ReplayItemResult[] };
