/**
 * Replay schemas and types (preflight, replays, per-item results), shared by the routes, the executor,
 * the console (type-only imports) and the tests. The contract: /work/notes/replay-contract.md and
 * docs/replay.md.
 */
import { z } from "zod";
import { sourceName } from "@/lib/claims/schema";
import { instant, storableText } from "@/lib/http/fields";
import { pathId, uuid } from "@/lib/http/ids";
import { cursorParam } from "@/lib/pagination";
import { HEALTH_STATES } from "./health";
import { REPLAY_OUTCOMES, REPLAY_STATES } from "./outcome";

export const CATEGORIES = ["alive", "expiring", "expired_processed", "never_processed", "in_flight"] as const;
export const category = z.enum(CATEGORIES);
export type Category = (typeof CATEGORIES)[number];

export const MAX_PREFLIGHT_ITEMS = 5000;
/** A preflight may be used to start a replay for this long after it was made. */
export const PREFLIGHT_VALID_SECONDS = 15 * 60;
export const MAX_WINDOW_SECONDS = 90 * 86400;

const replayId = pathId("replay_not_found", (id) => `no replay ${id}`);
/** /replays/{id}/…: a malformed id is the same 404 as an unknown one (lib/http/ids.ts). */
export const replayParams = z.strictObject({ id: replayId });
/** /replays/{id}/items/{deadLetterId}/…. */
export const replayItemParams = z.strictObject({
  id: replayId,
  deadLetterId: pathId("replay_item_not_found", (id) => `no item ${id} in the replay`),
});
/** /replays/preflight/{id}/…. */
export const preflightParams = z.strictObject({ id: pathId("preflight_not_found", (id) => `no preflight ${id}`) });

export const preflightRequest = z
  .strictObject({
    source: sourceName,
    deadLetterIds: z
      .array(uuid())
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


/** One of the preflight's readiness checks (lib/replay/readiness.ts): everything Start checks, asked first. */
export const readinessCheckSchema = z.object({
  check: z.enum(["permission", "destination", "signing_secret", "reachable"]),
  label: z.string(),
  /** pass; fail (Start would refuse when blocksStart); warn (worth knowing, Start accepts it). */
  state: z.enum(["pass", "fail", "warn"]),
  /** Whether Start refuses while this check fails. */
  blocksStart: z.boolean(),
  /** What was found, in a sentence. */
  detail: z.string(),
  /** Who can fix a failing check and how (an admin action, with the console page that does it). */
  fix: z.object({ who: z.string(), action: z.string(), href: z.string().nullable() }).nullable(),
});
export type ReadinessCheck = z.infer<typeof readinessCheckSchema>;


/** One pending dead letter as a preflight classified it. */
export const preflightItemSchema = z.object({
  deadLetterId: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  category,
  keyExpiresAt: instant.nullable(),
  processedAt: instant.nullable(),
  reason: z.string(),
});
export type PreflightItem = z.infer<typeof preflightItemSchema>;

const preflightCount = z.number().int().nonnegative();
export const preflightCountsSchema = z.object({
  ...(Object.fromEntries(CATEGORIES.map((c) => [c, preflightCount])) as Record<Category, typeof preflightCount>),
  total: preflightCount,
});
export type PreflightCounts = z.infer<typeof preflightCountsSchema>;

/**
 * A preflight as the API answers it (POST /api/v1/replays/preflight, GET …/preflight/{id}, …/extend's
 * `preflight`, POST /api/v1/replays/{id}/retry-failed): the routes declare it, the console parses its
 * answers with it (components/replay/queries.ts), so a server and console that disagree say so.
 */
export const preflightSchema = z.object({
  preflightId: z.string(),
  source: z.string(),
  createdAt: instant,
  validUntil: instant,
  windowSeconds: z.number().int().nonnegative(),
  extendedAt: instant.nullable(),
  /** True when the filter selected more than MAX_PREFLIGHT_ITEMS pending letters (the oldest failures were taken). */
  truncated: z.boolean(),
  /** The finished replay whose failed items this preflight retries (POST /api/v1/replays/{id}/retry-failed), else null. */
  retryOf: z.string().nullable(),
  counts: preflightCountsSchema,
  items: z.array(preflightItemSchema),
  /** Everything Start checks, as of this answer (readiness.ts): permission, destination, signing secret, reachability. */
  checks: z.array(readinessCheckSchema),
  /** No blocking check fails: Start would not refuse for the source's set-up or the caller's permission. */
  ready: z.boolean(),
  /** The retry schedule a replay started without `retry` gets: this deployment's KEYWARD_REPLAY_RETRY_* (lib/replay/backoff.ts). */
  retryDefault: z.object({ maxAttempts: z.number().int().positive(), initialDelaySeconds: z.number().positive(), maxDelaySeconds: z.number().positive() }),
});
export type Preflight = z.infer<typeof preflightSchema>;

/** POST /api/v1/replays/preflight/{id}/extend's answer: how many keys were extended, and the preflight re-classified. */
export const extendPreflightSchema = z.object({ extended: z.number().int().nonnegative(), preflight: preflightSchema });

export const MAX_RATE_PER_SECOND = 500;
export const DEFAULT_RATE_PER_SECOND = 50;
export const MAX_CONCURRENCY = 32;
export const DEFAULT_CONCURRENCY = 4;
/** A forced replay (one that includes expired_processed) says why in at least this many characters. */
export const MIN_FORCE_REASON = 10;

export const MAX_RETRY_ATTEMPTS = 100;
export const MAX_RETRY_DELAY_SECONDS = 86_400;

/**
 * A replay's retry schedule as a start request sets it (lib/replay/backoff.ts): each field left out takes
 * the deployment's default (KEYWARD_REPLAY_RETRY_*: 12 attempts, 10 s doubling to 1 h).
 */
export const retryScheduleRequest = z
  .strictObject({
    maxAttempts: z.number().int().min(1).max(MAX_RETRY_ATTEMPTS, `must be at most ${MAX_RETRY_ATTEMPTS}`).optional(),
    initialDelaySeconds: z.number().min(0.001).max(MAX_RETRY_DELAY_SECONDS, `must be at most ${MAX_RETRY_DELAY_SECONDS} seconds (a day)`).optional(),
    maxDelaySeconds: z.number().min(0.001).max(MAX_RETRY_DELAY_SECONDS, `must be at most ${MAX_RETRY_DELAY_SECONDS} seconds (a day)`).optional(),
  })
  .refine((r) => r.initialDelaySeconds === undefined || r.maxDelaySeconds === undefined || r.initialDelaySeconds <= r.maxDelaySeconds, {
    message: "must not be below initialDelaySeconds",
    path: ["maxDelaySeconds"],
  });

export const startReplayRequest = z.strictObject({
  preflightId: uuid(),
  include: z.array(category).min(1, "must name at least one category"),
  force: z.strictObject({ reason: storableText().trim().min(MIN_FORCE_REASON, `must be at least ${MIN_FORCE_REASON} characters: say why`).max(1000) }).optional(),
  ratePerSecond: z.number().int().min(1).max(MAX_RATE_PER_SECOND).default(DEFAULT_RATE_PER_SECOND),
  concurrency: z.number().int().min(1).max(MAX_CONCURRENCY).default(DEFAULT_CONCURRENCY),
  retry: retryScheduleRequest.optional(),
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
  /** How a finished replay ended (lib/replay/outcome.ts): only replays with this outcome. */
  outcome: z.enum(REPLAY_OUTCOMES).optional(),
  /** running (running or paused) or finished (completed or cancelled). */
  state: z.enum(REPLAY_STATES).optional(),
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

const countOf = z.number().int().nonnegative();

const headerPairs = z.array(z.tuple([z.string(), z.string()]));
/** One attempt as the API answers it (GET /api/v1/dead-letters/{id}/attempts). */
export const replayAttemptSchema = z.object({
  id: z.string(),
  replayId: z.string(),
  /** 1-based, per replay. */
  attempt: z.number().int().positive(),
  at: instant,
  destination: z.string(),
  status: z.number().int().nullable(),
  latencyMs: z.number().nonnegative(),
  /** The first 2 KiB of the answer as text (UTF-8, invalid bytes as U+FFFD), null without an answer. */
  responseBody: z.string().nullable(),
  /** The headers sent, in order, secrets masked (a signature keeps its first characters); null for attempts recorded before they were kept. */
  requestHeaders: headerPairs.nullable(),
  /** The answer's headers, in order (set-cookie and the like masked); null without an HTTP answer. */
  responseHeaders: headerPairs.nullable(),
  error: z.string().nullable(),
  /** What the attempt led to. */
  outcome: z.enum(["delivered", "retry", "failed", "cancelled"]),
});
export type ReplayAttempt = z.infer<typeof replayAttemptSchema>;
/** GET /api/v1/dead-letters/{id}/attempts: a page of attempts, newest first. */
export const attemptPageSchema = z.object({ items: z.array(replayAttemptSchema), next: z.string().nullable() });
export type AttemptPage = z.infer<typeof attemptPageSchema>;

/** A replay's health as the API answers it (computed in lib/replay/health.ts). */
export const replayHealthSchema = z.object({
  state: z.enum(HEALTH_STATES),
  /** Why, in a sentence (null when ok or finished). */
  reason: z.string().nullable(),
  /** When the last result of an item was recorded (null: none yet). */
  lastSettledAt: instant.nullable(),
  /** Failed attempts since the last delivery (or since it was resumed). */
  consecutiveFailures: countOf,
  /** The latest failed attempt's error (or why the executor paused the replay), and when. */
  lastError: z.string().nullable(),
  lastErrorAt: instant.nullable(),
});

/** GET /api/v1/replays items, GET /api/v1/replays/{id} (with failures and items), pause/resume/cancel answers. */
export const replaySummarySchema = z.object({
  id: z.string(),
  source: z.string(),
  status: z.enum(REPLAY_STATUSES),
  preflightId: z.string(),
  include: z.array(category),
  forced: z.boolean(),
  forceReason: z.string().nullable(),
  ratePerSecond: countOf,
  concurrency: countOf,
  createdBy: z.string(),
  createdAt: instant,
  finishedAt: instant.nullable(),
  total: countOf,
  /** Where the executor sends this replay's items now (the source's destination, read at each batch); null before its first batch. */
  destination: z.string().nullable(),
  /** Items by outcome. */
  counts: z.object(Object.fromEntries(OUTCOMES.map((o) => [o, countOf])) as Record<Outcome, typeof countOf>),
  /**
   * How it ended (lib/replay/outcome.ts): succeeded (all delivered), partial (some delivered), failed (none
   * delivered) or cancelled; null while running or paused.
   */
  outcome: z.enum(REPLAY_OUTCOMES).nullable(),
  /**
   * While running or paused: ok, stalled or failing, computed when read (lib/replay/health.ts), with the
   * latest failure; `finished` once completed or cancelled (then `outcome` says how it ended).
   */
  health: replayHealthSchema,
  /** The retry schedule it was started with (lib/replay/backoff.ts). */
  retry: z.object({ maxAttempts: countOf, initialDelaySeconds: z.number(), maxDelaySeconds: z.number() }),
  /** When its earliest item waiting for a retry (pending after a failed attempt) is next attempted (null: none waits). */
  nextAttemptAt: instant.nullable(),
});
export type ReplaySummary = z.infer<typeof replaySummarySchema>;

export const replayItemResultSchema = z.object({
  deadLetterId: z.string(),
  eventId: z.string(),
  outcome: z.enum(OUTCOMES),
  attempts: countOf,
  lastStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  finishedAt: instant.nullable(),
  /** A pending item's next attempt (after a failed one, the retry schedule's wait); null once settled. */
  nextAttemptAt: instant.nullable(),
});
export type ReplayItemResult = z.infer<typeof replayItemResultSchema>;

export const replaySchema = replaySummarySchema.extend({
  /** Failed and skipped_unsafe items (first 500). */
  failures: z.array(replayItemResultSchema),
  /** The first 500 items, in order. */
  items: z.array(replayItemResultSchema),
  /** Items waiting for a retry (pending after a failed attempt), soonest first (first 500). */
  waiting: z.array(replayItemResultSchema),
});
export type Replay = z.infer<typeof replaySchema>;

export const replayListSchema = z.object({ items: z.array(replaySummarySchema), next: z.string().nullable() });

/** POST /replays: the replay started (or the one the same idempotency key and body started before). */
export const replayStartedSchema = z.object({ replayId: z.string(), total: z.number().int().nonnegative() });
