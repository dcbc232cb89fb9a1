/**
 * The overview response (GET /api/v1/overview): live figures per source and their totals, read in one
 * statement at one database instant (`asOf`), and the metrics sampler's latest sample for what is too
 * large to count on every refresh. Shared by the route, the console and the tests.
 */
import { z } from "zod";
import { instant, storableText } from "@/lib/http/fields";
import { metricSampleSchema } from "@/lib/metrics/schema";
import { REPLAY_OUTCOMES } from "@/lib/replay/outcome";
import { MAX_SOURCE_ROWS } from "./source-rows";

const count = z.number().int().nonnegative();

/** Claim outcomes summed over the last hour of claim_counts minute buckets. */
export const claimCountsSchema = z.object({
  /** New keys: first claims, reclaims after expiry and lease takeovers. */
  claimed: count,
  /** Deliveries rejected because the key already existed and was done. */
  duplicate: count,
  /** Deliveries rejected because another worker held the key's lease. */
  inFlight: count,
  /** Deliveries whose payload hash differed from the stored one: same event id, different content. */
  payloadMismatch: count,
});
export type ClaimCounts = z.infer<typeof claimCountsSchema>;

/**
 * dedup_keys by state, at `asOf`. Alive and expired keys are counted one by one only up to `countLimit`
 * rows; null means "more than that, not counted" (the latest sample then has the estimate).
 */
export const keyCountsSchema = z.object({
  /** expires_at > now: still preventing duplicates. null: the table holds more than countLimit keys. */
  alive: count.nullable(),
  /** Alive and status 'processing': a worker holds the lease. */
  inFlight: count,
  /** In flight but the lease is over: the worker likely died; the next delivery takes the lease over. */
  leaseLapsed: count,
  /**
   * expires_at <= now but not yet deleted by the pruner. null: not counted (per source: the table holds
   * more than countLimit keys; in the totals: more than countLimit are expired).
   */
  expired: count.nullable(),
});
export type KeyCounts = z.infer<typeof keyCountsSchema>;

export const sourceTtlSchema = z.object({
  retryWindowSeconds: count,
  queueLagSeconds: count,
  clockSkewSeconds: count,
  replaySeconds: count,
  /** The sum of the four parts: how long a key lives. */
  ttlSeconds: count,
});
export type SourceTtl = z.infer<typeof sourceTtlSchema>;

export const sourceOverviewSchema = z.object({
  source: z.string(),
  createdAt: instant,
  ttl: sourceTtlSchema,
  keys: keyCountsSchema,
  lastHour: claimCountsSchema,
});
export type SourceOverview = z.infer<typeof sourceOverviewSchema>;

/** An inlet's lag as its consumer last reported it (lib/inlets; no URL: viewers read this). */
export const inletLagSchema = z.object({
  id: z.string(),
  source: z.string(),
  /** amqp (a RabbitMQ queue) · bullmq (a queue's failed jobs) · nats (a JetStream consumer's exhausted messages) */
  kind: z.enum(["amqp", "bullmq", "nats"]),
  queue: z.string(),
  state: z.enum(["starting", "consuming", "error"]),
  lastError: z.string().nullable(),
  /** Messages waiting in the queue when last checked; null before the first check. */
  lagMessages: count.nullable(),
  lagCheckedAt: instant.nullable(),
  /** When the last message was stored, and how long after its dead-lettering. */
  lastMessageAt: instant.nullable(),
  lastMessageAgeSeconds: z.number().nonnegative().nullable(),
});
export type InletLag = z.infer<typeof inletLagSchema>;

export const overviewSchema = z.object({
  /** The database's now() when the figures were read. */
  asOf: instant,
  /** Start of the oldest minute bucket counted in `lastHour` (the current, partial minute is the newest). */
  lastHourSince: instant,
  /** The most keys counted one by one on a refresh; past it `alive` and per-source `expired` are null. */
  countLimit: count,
  /** The sampler's newest sample (sizes, row estimate, backlog), or null before the first one. */
  latestSample: metricSampleSchema.nullable(),
  totals: z.object({ sources: count, keys: keyCountsSchema, lastHour: claimCountsSchema }),
  /**
   * Running replays, and how many of them are unhealthy (stalled or failing: lib/replay/health.ts), with
   * the unhealthy ones (oldest first, at most 10): why, and their latest error and its time.
   */
  replays: z.object({
    running: count,
    unhealthy: count,
    stalled: count,
    failing: count,
    unhealthyItems: z
      .array(
        z.object({
          id: z.string(),
          source: z.string(),
          state: z.enum(["stalled", "failing"]),
          reason: z.string().nullable(),
          lastError: z.string().nullable(),
          lastErrorAt: instant.nullable(),
        }),
      )
      .optional(),
    /**
     * Replays finished in the last 24 hours by outcome (lib/replay/outcome.ts), and the newest of them that
     * did not succeed (partial, failed, cancelled; at most 5) with their counts; always sent by the server.
     */
    finishedLastDay: z.object(Object.fromEntries(REPLAY_OUTCOMES.map((o) => [o, count])) as Record<(typeof REPLAY_OUTCOMES)[number], typeof count>).optional(),
    recentlyFinished: z
      .array(
        z.object({
          id: z.string(),
          source: z.string(),
          outcome: z.enum(REPLAY_OUTCOMES),
          finishedAt: instant,
          total: count,
          delivered: count,
          failed: count,
          skippedUnsafe: count,
        }),
      )
      .optional(),
  }),
  /** Dead letters waiting for a replay or a decision (status pending), and when the oldest of them failed; always sent by the server. */
  deadLetters: z.object({ pending: count, oldestPendingAt: instant.nullable() }).optional(),
  /**
   * The sources asked for (lib/overview/source-rows.ts): every source by name, or those whose name contains
   * `q`; past `limit` of them, the `limit` busiest, busiest first. `totals` always count every source.
   */
  sources: z.array(sourceOverviewSchema),
  /** How many sources match `q` (every source without it); more than `sources` holds when `limit` left some out. */
  sourcesMatching: count,
  /** The inlets (by source, then creation); always sent by the server. */
  inlets: z.array(inletLagSchema).optional(),
});
export type Overview = z.infer<typeof overviewSchema>;

/** GET /api/v1/overview's query string: which sources to send rows for (the totals cover every source). */
export const overviewQuery = z.object({
  /** At most this many sources: past it, the busiest. Without it, every source. */
  limit: z.coerce.number().int("must be a whole number").min(1).max(MAX_SOURCE_ROWS, `must be at most ${MAX_SOURCE_ROWS}`).optional(),
  /** Only sources whose name contains this text, in any case. */
  q: storableText().max(200).optional(),
});
export type OverviewQuery = z.infer<typeof overviewQuery>;
