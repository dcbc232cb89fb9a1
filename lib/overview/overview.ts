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
 * lists the RabbitMQ inlets with the lag their consumers last reported (a handful of rows).
 */
import "server-only";
import { query, type Queryable } from "../db/sql";
import { getLatestSample } from "../metrics/history";
import { loadEnv } from "../config/env";
import { replayHealth } from "../replay/health";
import type { ClaimCounts, InletLag, KeyCounts, Overview, SourceOverview } from "./schema";

/** Keys counted one by one per refresh at most: ~100k rows read sequentially take a few tens of ms. */
export const COUNT_LIMIT = 100_000;

type OverviewRow = {
  as_of: Date;
  since: Date;
  all_counted: boolean;
  /** Expired keys in the whole table, counted up to COUNT_LIMIT + 1. */
  expired_total: number;
  // Null on the single row returned when no source exists (the LEFT JOIN keeps the clock row).
  name: string | null;
  created_at: Date | null;
  retry_window_seconds: number;
  queue_lag_seconds: number;
  clock_skew_seconds: number;
  replay_seconds: number;
  ttl_seconds: number;
  keys_alive: number;
  keys_in_flight: number;
  keys_lease_lapsed: number;
  keys_expired: number;
  claimed: number;
  duplicate: number;
  in_flight: number;
  payload_mismatch: number;
};

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
SELECT id, source, rate_per_second, running_since, last_settled_at, consecutive_failures, last_error, last_error_at, now() AS db_now
FROM replays WHERE status = 'running' ORDER BY created_at, id`;

type RunningReplayRow = {
  id: string;
  source: string;
  rate_per_second: number;
  running_since: Date;
  last_settled_at: Date | null;
  consecutive_failures: number;
  last_error: string | null;
  last_error_at: Date | null;
  db_now: Date;
};

/** How many replays run, and how many of them are stalled or failing. */
async function replayHealthCounts(on?: Queryable): Promise<Overview["replays"]> {
  const rows = await query<RunningReplayRow>(RUNNING_REPLAYS_SQL, [], on);
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

export async function getOverview(on?: Queryable, options: { countLimit?: number } = {}): Promise<Overview> {
  const countLimit = options.countLimit ?? COUNT_LIMIT;
  const rows = await query<OverviewRow>(OVERVIEW_SQL, [countLimit + 1], on);
  const latestSample = await getLatestSample(on);
  const inlets = await query<{
    id: string; source: string; queue: string; state: InletLag["state"]; last_error: string | null; lag_messages: number | null;
    lag_checked_at: Date | null; last_message_at: Date | null; last_message_age_seconds: number | null;
  }>(
    `SELECT id, source, queue, state, last_error, lag_messages::float8 AS lag_messages, lag_checked_at, last_message_at,
            last_message_age_seconds
     FROM inlets ORDER BY source, created_at, id`,
    [],
    on,
  );
  const replays = await replayHealthCounts(on);
  const [clock] = rows;
  const sources = rows.filter((r) => r.name !== null).map((r) => toSourceOverview(r));
  const keys = sources.reduce((acc, s) => addKeys(acc, s.keys), NO_KEYS);
  // Past the limit, per-source expired counts are unknown but the total may still be counted.
  if (keys.expired === null && clock.expired_total <= countLimit) keys.expired = clock.expired_total;
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
    sources,
    inlets: inlets.map((i) => ({
      id: i.id,
      source: i.source,
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
      retryWindowSeconds: r.retry_window_seconds,
      queueLagSeconds: r.queue_lag_seconds,
      clockSkewSeconds: r.clock_skew_seconds,
      replaySeconds: r.replay_seconds,
      ttlSeconds: r.ttl_seconds,
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
