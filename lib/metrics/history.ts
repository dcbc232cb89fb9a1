/**
 * The metrics history of a time range: the sampler's samples and the pruner's runs, bucketed
 * server-side to `stepFor(range)` so a 30-day answer stays as small as a day's. Buckets start on
 * multiples of the step since the Unix epoch (date_bin), which the console's gap filling assumes too.
 *
 * With `source`, the samples are that source's figures (SOURCE_SAMPLES_SQL); pruning runs are the
 * table's, for every source.
 *
 * Cost: two range reads, on the metric_samples primary key and the prune_runs started_at index.
 */
import "server-only";
import { query, type Queryable } from "../db/sql";
import type { MetricsQuery, MetricsResponse, MetricSample, PruneRunPoint } from "./schema";
import { stepFor } from "./step";

type SampleRow = {
  at: Date;
  table_bytes: number;
  index_bytes: number;
  estimated_rows: number;
  alive_keys: number;
  expiry_backlog: number;
  backlog_capped: boolean;
  in_flight: number;
  claims: number;
  duplicates: number;
};

type RunRow = {
  started_at: Date;
  finished_at: Date | null;
  rows: number;
  batches: number;
  timed_rows: number | null;
  seconds: number | null;
  stopped: string | null;
  runs: number;
};

const SAMPLES_SQL = `
SELECT date_bin(make_interval(secs => $3), at, timestamptz 'epoch') AS at,
       round(avg(table_bytes))::int8 AS table_bytes, round(avg(index_bytes))::int8 AS index_bytes,
       round(avg(estimated_rows))::int8 AS estimated_rows, round(avg(alive_keys))::int8 AS alive_keys,
       max(expiry_backlog) AS expiry_backlog, bool_or(backlog_capped) AS backlog_capped,
       max(in_flight) AS in_flight, sum(claims)::int8 AS claims, sum(duplicates)::int8 AS duplicates
FROM metric_samples
WHERE at >= $1 AND at <= $2
GROUP BY 1 ORDER BY 1`;

/**
 * One source's figures ($4) from the samples' per_source entries (per-source.ts): its keys, its share
 * of the table's bytes (its rows over the table's rows: an estimate), its claims and duplicates. Samples
 * taken before per-source key counts existed have none: they are gaps, never zeros.
 */
const SOURCE_SAMPLES_SQL = `
SELECT date_bin(make_interval(secs => $3), m.at, timestamptz 'epoch') AS at,
       round(avg(coalesce(m.table_bytes * k.rows / nullif(m.estimated_rows, 0), 0)))::int8 AS table_bytes,
       round(avg(coalesce(m.index_bytes * k.rows / nullif(m.estimated_rows, 0), 0)))::int8 AS index_bytes,
       round(avg(k.rows))::int8 AS estimated_rows, round(avg(k.alive))::int8 AS alive_keys,
       max(k.backlog)::int8 AS expiry_backlog, bool_or(m.backlog_capped) AS backlog_capped,
       max(k.in_flight)::int8 AS in_flight, sum(k.claims)::int8 AS claims, sum(k.duplicates)::int8 AS duplicates
FROM metric_samples m
CROSS JOIN LATERAL (
  SELECT e.alive, e.backlog, e.alive + e.backlog AS rows, e.in_flight, e.claims, e.duplicates
  FROM (SELECT (m.per_source->$4->>'aliveKeys')::float8 AS alive, (m.per_source->$4->>'expiryBacklog')::float8 AS backlog,
               coalesce((m.per_source->$4->>'inFlight')::float8, 0) AS in_flight,
               coalesce((m.per_source->$4->>'claims')::float8, 0) AS claims,
               coalesce((m.per_source->$4->>'duplicates')::float8, 0) AS duplicates) e) k
WHERE m.at >= $1 AND m.at <= $2 AND m.per_source->$4 ? 'aliveKeys'
GROUP BY 1 ORDER BY 1`;

/** At most this many prune-run points (a scheduled pruner runs once a minute: 720 in 12 hours). */
const MAX_RUN_POINTS = 2000;

export async function getMetricsHistory(q: MetricsQuery, on?: Queryable): Promise<MetricsResponse> {
  const step = stepFor((q.to.getTime() - q.from.getTime()) / 1000);
  // From the start of the bucket that holds `from`, so the first bucket is whole.
  const start = new Date(Math.floor(q.from.getTime() / (step * 1000)) * step * 1000);

  const samples = await query<SampleRow>(q.source ? SOURCE_SAMPLES_SQL : SAMPLES_SQL, q.source ? [start, q.to, step, q.source] : [start, q.to, step], on);

  // Minute steps list every run; coarser ones merge the runs that started in one bucket.
  const group = step === 60 ? "id" : "date_bin(make_interval(secs => $3), started_at, timestamptz 'epoch')";
  const runs = await query<RunRow>(
    `SELECT min(started_at) AS started_at,
            CASE WHEN bool_and(finished_at IS NOT NULL) THEN max(finished_at) END AS finished_at,
            sum(rows)::int8 AS rows, sum(batches)::int8 AS batches,
            (sum(rows) FILTER (WHERE finished_at IS NOT NULL))::int8 AS timed_rows,
            (sum(extract(epoch FROM finished_at - started_at)) FILTER (WHERE finished_at IS NOT NULL))::float8 AS seconds,
            (array_agg(stopped ORDER BY started_at DESC))[1] AS stopped,
            count(*)::int8 AS runs
     FROM prune_runs
     WHERE started_at >= $1 AND started_at <= $2
     GROUP BY ${group} ORDER BY 1 LIMIT ${MAX_RUN_POINTS}`,
    step === 60 ? [start, q.to] : [start, q.to, step],
    on,
  );

  return {
    from: q.from.toISOString(),
    to: q.to.toISOString(),
    ...(q.source ? { source: q.source } : {}),
    step,
    samples: samples.map(toSample),
    pruneRuns: runs.map(toRunPoint),
  };
}

/** The newest sample, or null before the sampler's first (the metric_samples primary key, backwards). */
export async function getLatestSample(on?: Queryable): Promise<MetricSample | null> {
  const [row] = await query<SampleRow>(
    `SELECT at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, backlog_capped, in_flight, claims, duplicates
     FROM metric_samples ORDER BY at DESC LIMIT 1`,
    [],
    on,
  );
  return row ? toSample(row) : null;
}

function toSample(r: SampleRow): MetricSample {
  return {
    at: r.at.toISOString(),
    tableBytes: r.table_bytes,
    indexBytes: r.index_bytes,
    estimatedRows: r.estimated_rows,
    aliveKeys: r.alive_keys,
    expiryBacklog: r.expiry_backlog,
    backlogCapped: r.backlog_capped,
    inFlight: r.in_flight,
    claims: r.claims,
    duplicates: r.duplicates,
  };
}

function toRunPoint(r: RunRow): PruneRunPoint {
  return {
    startedAt: r.started_at.toISOString(),
    finishedAt: r.finished_at?.toISOString() ?? null,
    rows: r.rows,
    batches: r.batches,
    rowsPerSecond: throughput(r.timed_rows, r.seconds),
    stopped: r.stopped,
    runs: r.runs,
  };
}

/** Rows per second of finished runs: null when none finished or they were too short to time. */
export function throughput(rows: number | null, seconds: number | null): number | null {
  if (rows === null || seconds === null) return null;
  if (rows === 0) return 0;
  return seconds > 0 ? Math.round((rows / seconds) * 10) / 10 : null;
}
