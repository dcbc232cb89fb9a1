/**
 * The console's live figures, read in one statement so every number shares one database instant:
 * per source, dedup_keys by state (alive, in flight, lease lapsed, expired but not yet pruned) and the
 * last hour of claim outcomes from claim_counts. A second read adds the metrics sampler's latest sample
 * (its own instant, `latestSample.at`), a third the running replays and how many are stalled or failing.
 *
 * Cost is bounded whatever the table's size (the console polls this every 10 s per open tab):
 * - alive and expired per source: counted in one grouped pass only when the table holds at most
 *   COUNT_LIMIT keys (found by reading at most COUNT_LIMIT + 1 rows); otherwise they are null and the
 *   console shows the latest sample's figures instead (the sampler counts more, once a minute, for
 *   every tab at once);
 * - expired in total, on a large table: the expires_at index alone, up to COUNT_LIMIT + 1 entries;
 * - in flight and lease lapsed: the partial index dedup_keys_in_flight_idx (keys holding a lease only);
 * - claims: at most 60 buckets per source through the claim_counts (bucket, source) primary key.
 *
 * Rows come from `sources`: keys or counts of a source that no longer exists are not shown. A third read
 * lists the inlets (RabbitMQ, BullMQ, NATS) with the lag their consumers last reported (a handful of rows).
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { readQuery } from "@/lib/db/read";
import { getLatestSample } from "@/lib/metrics/history";
import { loadEnv } from "@/lib/config/env";
import { dueAtSql, replayHealth } from "@/lib/replay/health";
import { REPLAY_OUTCOMES, replayOutcome, type ReplayOutcome } from "@/lib/replay/outcome";
import { OUTCOMES } from "@/lib/replay/schema";
import { INLET_KINDS, INLET_STATES } from "@/lib/inlets/schema";
import type { ClaimCounts, KeyCounts, Overview, OverviewQuery, SourceOverview } from "./schema";
import { selectSources } from "./source-rows";
import type { Db } from "@/lib/db/transaction";

/** Keys counted one by one per refresh at most: ~100k rows read sequentially take a few tens of ms. */
export const COUNT_LIMIT = 100_000;

const OverviewRow = z.object({
  as_of: z.date(),
  since: z.date(),
  all_counted: z.boolean(),
  /** Expired keys in the whole table, counted up to COUNT_LIMIT + 1. */
  expired_total: z.number(),
  // The source's columns are null on the single row returned when no source exists (the LEFT JOIN keeps the
  // clock row); that row is never turned into a source (toSourceOverview).
  name: z.string().nullable(),
  created_at: z.date().nullable(),
  retry_window_seconds: z.number().nullable(),
  queue_lag_seconds: z.number().nullable(),
  clock_skew_seconds: z.number().nullable(),
  replay_seconds: z.number().nullable(),
  ttl_seconds: z.number().nullable(),
  keys_alive: z.number(),
  keys_in_flight: z.number(),
  keys_lease_lapsed: z.number(),
  keys_expired: z.number(),
  claimed: z.number(),
  duplicate: z.number(),
  in_flight: z.number(),
  payload_mismatch: z.number(),
});
type OverviewRow = z.output<typeof OverviewRow>;

// "Last hour" = the 60 newest minute buckets: the current, partial minute and the 59 before it.
// $1 = COUNT_LIMIT + 1: reading that many rows means "more than the limit".
export const OVERVIEW_SQL = `
WITH clock AS (
  SELECT now() AS as_of, date_trunc('minute', now()) - interval '59 minutes' AS since
),
counted AS (
  SELECT (SELECT count(*) FROM (SELECT 1 FROM dedup_keys LIMIT $1) x) < $1 AS all_counted,
         (SELECT count(*) FROM (SELECT 1 FROM dedup_keys WHERE expires_at <= now() ORDER BY expires_at LIMIT $1) x) AS expired_total
),
-- Scans the table only when it holds at most COUNT_LIMIT keys (otherwise the WHERE is false up front).
keys AS (
  SELECT k.source,
         count(*) FILTER (WHERE k.expires_at > c.as_of) AS alive,
         count(*) FILTER (WHERE k.expires_at <= c.as_of) AS expired
  FROM dedup_keys k CROSS JOIN clock c
  WHERE (SELECT all_counted FROM counted)
  GROUP BY k.source
),
leased AS (
  SELECT k.source,
         count(*) FILTER (WHERE k.expires_at > c.as_of) AS in_flight,
         count(*) FILTER (WHERE k.expires_at > c.as_of AND k.lease_expires_at <= c.as_of) AS lease_lapsed
  FROM dedup_keys k CROSS JOIN clock c
  WHERE k.status = 'processing'
  GROUP BY k.source
),
claims AS (
  SELECT n.source, sum(n.claimed) AS claimed, sum(n.duplicate) AS duplicate,
         sum(n.in_flight) AS in_flight, sum(n.payload_mismatch) AS payload_mismatch
  FROM claim_counts n CROSS JOIN clock c
  WHERE n.bucket >= c.since
  GROUP BY n.source
)
SELECT c.as_of, c.since, d.all_counted, d.expired_total, s.name, s.created_at,
       s.retry_window_seconds, s.queue_lag_seconds, s.clock_skew_seconds, s.replay_seconds, s.ttl_seconds,
       coalesce(k.alive, 0) AS keys_alive, coalesce(l.in_flight, 0) AS keys_in_flight,
       coalesce(l.lease_lapsed, 0) AS keys_lease_lapsed, coalesce(k.expired, 0) AS keys_expired,
       coalesce(n.claimed, 0)::int8 AS claimed, coalesce(n.duplicate, 0)::int8 AS duplicate,
       coalesce(n.in_flight, 0)::int8 AS in_flight, coalesce(n.payload_mismatch, 0)::int8 AS payload_mismatch
FROM clock c
CROSS JOIN counted d
LEFT JOIN sources s ON true
LEFT JOIN keys k ON k.source = s.name
LEFT JOIN leased l ON l.source = s.name
LEFT JOIN claims n ON n.source = s.name
ORDER BY s.name`;

/** The unhealthy replays the Overview names one by one (the counts cover all). */
const MAX_UNHEALTHY_LISTED = 10;

/** Running replays with what their health is computed from (few rows: the replays_running_idx partial index). */
const RUNNING_REPLAYS_SQL = `
SELECT id, source, rate_per_second, running_since, last_settled_at, consecutive_failures, last_error, last_error_at, now() AS db_now,
       ${dueAtSql("replays")}
FROM replays WHERE status = 'running' ORDER BY created_at, id`;

const RunningReplayRow = z.object({
  id: z.string(),
  source: z.string(),
  rate_per_second: z.number(),
  running_since: z.date(),
  last_settled_at: z.date().nullable(),
  consecutive_failures: z.number(),
  last_error: z.string().nullable(),
  last_error_at: z.date().nullable(),
  due_at: z.date().nullable(),
  db_now: z.date(),
});
type RunningReplayRow = z.output<typeof RunningReplayRow>;

/** Replays finished in the last 24 hours, newest first, with their counts by item outcome (bounded: at most 1000). */
const FINISHED_REPLAYS_SQL = `
SELECT r.id, r.source, r.status, r.total, r.finished_at,
       (SELECT jsonb_object_agg(outcome, n) FROM (SELECT outcome, count(*)::int AS n FROM replay_items WHERE replay_id = r.id GROUP BY outcome) c) AS counts
FROM replays r
WHERE r.status IN ('completed', 'cancelled') AND r.finished_at > now() - interval '24 hours'
ORDER BY r.finished_at DESC, r.id DESC LIMIT 1000`;

/** The Overview lists this many of the last day's finished replays that did not succeed (the ones to look at). */
const RECENT_FINISHED_LISTED = 5;

/** The last day's finished replays by outcome, and the newest few that did not succeed. */
async function finishedReplays(db?: Db): Promise<Pick<Overview["replays"], "finishedLastDay" | "recentlyFinished">> {
  const rows = await query(
    z.object({ id: z.string(), source: z.string(), status: z.enum(["completed", "cancelled"]), total: z.number(), finished_at: z.date(), counts: z.partialRecord(z.enum(OUTCOMES), z.number()).nullable() }),
    FINISHED_REPLAYS_SQL,
    [],
    db,
  );
  const finishedLastDay = Object.fromEntries(REPLAY_OUTCOMES.map((o) => [o, 0])) as Record<ReplayOutcome, number>;
  const recentlyFinished: NonNullable<Overview["replays"]["recentlyFinished"]> = [];
  for (const r of rows) {
    const counts = r.counts ?? {};
    const outcome = replayOutcome({ status: r.status, total: r.total, counts })!;
    finishedLastDay[outcome]++;
    if (outcome !== "succeeded" && recentlyFinished.length < RECENT_FINISHED_LISTED) {
      recentlyFinished.push({
        id: r.id,
        source: r.source,
        outcome,
        finishedAt: r.finished_at.toISOString(),
        total: r.total,
        delivered: counts.delivered ?? 0,
        failed: counts.failed ?? 0,
        skippedUnsafe: counts.skipped_unsafe ?? 0,
      });
    }
  }
  return { finishedLastDay, recentlyFinished };
}

/** How many replays run, and how many of them are stalled or failing. */
async function replayHealthCounts(db?: Db): Promise<Overview["replays"]> {
  const rows = await readQuery(RunningReplayRow, RUNNING_REPLAYS_SQL, [], db);
  const timeoutMs = loadEnv().KEYWARD_REPLAY_TIMEOUT_MS;
  const healths = rows.map((r) => ({
    r,
    h: replayHealth(
        {
          status: "running",
          ratePerSecond: r.rate_per_second,
          runningSince: r.running_since,
          lastSettledAt: r.last_settled_at,
          consecutiveFailures: r.consecutive_failures,
          lastError: r.last_error,
          lastErrorAt: r.last_error_at,
          dueAt: r.due_at,
        },
        r.db_now,
        timeoutMs,
      ),
  }));
  const stalled = healths.filter(({ h }) => h.state === "stalled").length;
  const failing = healths.filter(({ h }) => h.state === "failing").length;
  const unhealthyItems = healths
    .filter(({ h }) => h.state !== "ok")
    .slice(0, MAX_UNHEALTHY_LISTED)
    .map(({ r, h }) => ({ id: r.id, source: r.source, state: h.state as "stalled" | "failing", reason: h.reason, lastError: h.lastError, lastErrorAt: h.lastErrorAt }));
  return { running: rows.length, unhealthy: stalled + failing, stalled, failing, unhealthyItems };
}

/** The figures, with rows for the sources `limit` and `q` pick (lib/overview/source-rows.ts); totals of every source. */
export async function getOverview(db?: Db, options: { countLimit?: number } & OverviewQuery = {}): Promise<Overview> {
  const countLimit = options.countLimit ?? COUNT_LIMIT;
  const rows = await readQuery(OverviewRow, OVERVIEW_SQL, [countLimit + 1], db); // a read replica's, when configured
  const latestSample = await getLatestSample(db);
  const inlets = await readQuery(
    z.object({ id: z.string(), source: z.string(), kind: z.enum(INLET_KINDS), queue: z.string(), state: z.enum(INLET_STATES), last_error: z.string().nullable(), lag_messages: z.number().nullable(), lag_checked_at: z.date().nullable(), last_message_at: z.date().nullable(), last_message_age_seconds: z.number().nullable() }),
    `SELECT id, source, kind, queue, state, last_error, lag_messages::float8 AS lag_messages, lag_checked_at, last_message_at,
            last_message_age_seconds
     FROM inlets ORDER BY source, created_at, id`,
    [],
    db,
  );
  const replays = { ...(await replayHealthCounts(db)), ...(await finishedReplays(db)) };
  // The pending letters (the dead_letters_pending_idx partial index).
  const [letters] = await query(
    z.object({ pending: z.number(), oldest: z.date().nullable() }),
    "SELECT count(*)::int8 AS pending, min(failed_at) AS oldest FROM dead_letters WHERE status = 'pending'",
    [],
    db,
  );
  const [clock] = rows;
  const sources = rows.filter((r) => r.name !== null).map((r) => toSourceOverview(r));
  const keys = sources.reduce((acc, s) => addKeys(acc, s.keys), NO_KEYS);
  // Past the limit, per-source expired counts are unknown but the total may still be counted.
  if (keys.expired === null && clock.expired_total <= countLimit) keys.expired = clock.expired_total;
  const picked = selectSources(sources, { q: options.q, limit: options.limit });
  return {
    asOf: clock.as_of.toISOString(),
    lastHourSince: clock.since.toISOString(),
    countLimit,
    latestSample,
    totals: {
      sources: sources.length,
      keys,
      lastHour: sources.reduce((acc, s) => addClaims(acc, s.lastHour), NO_CLAIMS),
    },
    replays,
    deadLetters: { pending: letters.pending, oldestPendingAt: letters.oldest?.toISOString() ?? null },
    sources: picked.rows,
    sourcesMatching: picked.matching,
    inlets: inlets.map((i) => ({
      id: i.id,
      source: i.source,
      kind: i.kind,
      queue: i.queue,
      state: i.state,
      lastError: i.last_error,
      lagMessages: i.lag_messages,
      lagCheckedAt: i.lag_checked_at?.toISOString() ?? null,
      lastMessageAt: i.last_message_at?.toISOString() ?? null,
      lastMessageAgeSeconds: i.last_message_age_seconds,
    })),
  };
}

function toSourceOverview(r: OverviewRow): SourceOverview {
  return {
    source: r.name!,
    createdAt: r.created_at!.toISOString(),
    ttl: {
      retryWindowSeconds: r.retry_window_seconds!,
      queueLagSeconds: r.queue_lag_seconds!,
      clockSkewSeconds: r.clock_skew_seconds!,
      replaySeconds: r.replay_seconds!,
      ttlSeconds: r.ttl_seconds!,
    },
    keys: {
      alive: r.all_counted ? r.keys_alive : null,
      inFlight: r.keys_in_flight,
      leaseLapsed: r.keys_lease_lapsed,
      expired: r.all_counted ? r.keys_expired : null,
    },
    lastHour: {
      claimed: r.claimed,
      duplicate: r.duplicate,
      inFlight: r.in_flight,
      payloadMismatch: r.payload_mismatch,
    },
  };
}

const NO_KEYS: KeyCounts = { alive: 0, inFlight: 0, leaseLapsed: 0, expired: 0 };
const NO_CLAIMS: ClaimCounts = { claimed: 0, duplicate: 0, inFlight: 0, payloadMismatch: 0 };

/** A sum of counts that may be unknown: unknown if either is. */
const plus = (a: number | null, b: number | null) => (a === null || b === null ? null : a + b);

function addKeys(a: KeyCounts, b: KeyCounts): KeyCounts {
  return {
    alive: plus(a.alive, b.alive),
    inFlight: a.inFlight + b.inFlight,
    leaseLapsed: a.leaseLapsed + b.leaseLapsed,
    expired: plus(a.expired, b.expired),
  };
}

function addClaims(a: ClaimCounts, b: ClaimCounts): ClaimCounts {
  return {
    claimed: a.claimed + b.claimed,
    duplicate: a.duplicate + b.duplicate,
    inFlight: a.inFlight + b.inFlight,
    payloadMismatch: a.payloadMismatch + b.payloadMismatch,
  };
}
