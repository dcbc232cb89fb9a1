/**
 * The console's live figures, read in one statement so every number shares one database instant:
 * per source, dedup_keys by state (alive, in flight, lease lapsed, expired but not yet pruned) and the
 * last hour of claim outcomes from claim_counts.
 *
 * Cost: the key counts scan dedup_keys once (one grouped pass, no per-source queries). The table is
 * kept small by TTL and pruning, so this is cheap at the sizes Keyward is meant for; the console polls
 * it every 10 s per open tab. The claim counts read at most 60 buckets per source through the
 * (bucket, source) primary key.
 *
 * Rows come from `sources`: keys or counts of a source that no longer exists are not shown.
 */
import { query, type Queryable } from "../db/sql";
import type { ClaimCounts, KeyCounts, Overview, SourceOverview } from "./schema";

type OverviewRow = {
  as_of: Date;
  since: Date;
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
export const OVERVIEW_SQL = `
WITH clock AS (
  SELECT now() AS as_of, date_trunc('minute', now()) - interval '59 minutes' AS since
),
keys AS (
  SELECT k.source,
         count(*) FILTER (WHERE k.expires_at > c.as_of) AS alive,
         count(*) FILTER (WHERE k.expires_at > c.as_of AND k.status = 'processing') AS in_flight,
         count(*) FILTER (WHERE k.expires_at > c.as_of AND k.status = 'processing'
                            AND k.lease_expires_at <= c.as_of) AS lease_lapsed,
         count(*) FILTER (WHERE k.expires_at <= c.as_of) AS expired
  FROM dedup_keys k CROSS JOIN clock c
  GROUP BY k.source
),
claims AS (
  SELECT n.source, sum(n.claimed) AS claimed, sum(n.duplicate) AS duplicate,
         sum(n.in_flight) AS in_flight, sum(n.payload_mismatch) AS payload_mismatch
  FROM claim_counts n CROSS JOIN clock c
  WHERE n.bucket >= c.since
  GROUP BY n.source
)
SELECT c.as_of, c.since, s.name, s.created_at,
       s.retry_window_seconds, s.queue_lag_seconds, s.clock_skew_seconds, s.replay_seconds, s.ttl_seconds,
       coalesce(k.alive, 0) AS keys_alive, coalesce(k.in_flight, 0) AS keys_in_flight,
       coalesce(k.lease_lapsed, 0) AS keys_lease_lapsed, coalesce(k.expired, 0) AS keys_expired,
       coalesce(n.claimed, 0)::int8 AS claimed, coalesce(n.duplicate, 0)::int8 AS duplicate,
       coalesce(n.in_flight, 0)::int8 AS in_flight, coalesce(n.payload_mismatch, 0)::int8 AS payload_mismatch
FROM clock c
LEFT JOIN sources s ON true
LEFT JOIN keys k ON k.source = s.name
LEFT JOIN claims n ON n.source = s.name
ORDER BY s.name`;

export async function getOverview(on?: Queryable): Promise<Overview> {
  const rows = await query<OverviewRow>(OVERVIEW_SQL, [], on);
  const [clock] = rows;
  const sources = rows.filter((r) => r.name !== null).map(toSourceOverview);
  return {
    asOf: clock.as_of.toISOString(),
    lastHourSince: clock.since.toISOString(),
    totals: {
      sources: sources.length,
      keys: sources.reduce((acc, s) => addCounts(acc, s.keys), NO_KEYS),
      lastHour: sources.reduce((acc, s) => addCounts(acc, s.lastHour), NO_CLAIMS),
    },
    sources,
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
      alive: r.keys_alive,
      inFlight: r.keys_in_flight,
      leaseLapsed: r.keys_lease_lapsed,
      expired: r.keys_expired,
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

function addCounts<T extends KeyCounts | ClaimCounts>(a: T, b: T): T {
  const sum = { ...a } as Record<string, number>;
  for (const k of Object.keys(sum)) sum[k] += (b as Record<string, number>)[k];
  return sum as T;
}
