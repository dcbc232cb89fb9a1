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
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { formatDuration } from "@/lib/sources/duration";
import { ANNOTATED_ACTIONS, type MetricAnnotation, type MetricsQuery, type MetricsResponse, type MetricSample, type PruneRunPoint } from "./schema";
import { stepFor } from "./step";
import type { Db } from "@/lib/db/transaction";

const SampleRow = z.object({
  at: z.date(),
  table_bytes: z.number(),
  index_bytes: z.number(),
  estimated_rows: z.number(),
  alive_keys: z.number(),
  expiry_backlog: z.number(),
  backlog_capped: z.boolean(),
  in_flight: z.number(),
  claims: z.number(),
  duplicates: z.number(),
  alive_keys_min: z.number(),
  alive_keys_max: z.number(),
  table_bytes_min: z.number(),
  table_bytes_max: z.number(),
});
type SampleRow = z.output<typeof SampleRow>;

/** At most this many annotations in one answer (the oldest first: a flood of edits is cut at the end). */
const MAX_ANNOTATIONS = 200;

const RunRow = z.object({
  started_at: z.date(),
  finished_at: z.date().nullable(),
  rows: z.number(),
  batches: z.number(),
  timed_rows: z.number().nullable(),
  seconds: z.number().nullable(),
  stopped: z.string().nullable(),
  runs: z.number(),
  failed: z.number(),
  last_error_at: z.date().nullable(),
  last_error: z.string().nullable(),
});
type RunRow = z.output<typeof RunRow>;

const SAMPLES_SQL = `
SELECT date_bin(make_interval(secs => $3), at, timestamptz 'epoch') AS at,
       round(avg(table_bytes))::int8 AS table_bytes, round(avg(index_bytes))::int8 AS index_bytes,
       round(avg(estimated_rows))::int8 AS estimated_rows, round(avg(alive_keys))::int8 AS alive_keys,
       max(expiry_backlog) AS expiry_backlog, bool_or(backlog_capped) AS backlog_capped,
       max(in_flight) AS in_flight, sum(claims)::int8 AS claims, sum(duplicates)::int8 AS duplicates,
       min(alive_keys)::int8 AS alive_keys_min, max(alive_keys)::int8 AS alive_keys_max,
       min(table_bytes)::int8 AS table_bytes_min, max(table_bytes)::int8 AS table_bytes_max
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
       max(k.in_flight)::int8 AS in_flight, sum(k.claims)::int8 AS claims, sum(k.duplicates)::int8 AS duplicates,
       round(min(k.alive))::int8 AS alive_keys_min, round(max(k.alive))::int8 AS alive_keys_max,
       round(min(coalesce(m.table_bytes * k.rows / nullif(m.estimated_rows, 0), 0)))::int8 AS table_bytes_min,
       round(max(coalesce(m.table_bytes * k.rows / nullif(m.estimated_rows, 0), 0)))::int8 AS table_bytes_max
FROM metric_samples m
CROSS JOIN LATERAL (
  SELECT e.alive, e.backlog, e.alive + e.backlog AS rows, e.in_flight, e.claims, e.duplicates
  FROM (SELECT (m.per_source->$4->>'aliveKeys')::float8 AS alive, (m.per_source->$4->>'expiryBacklog')::float8 AS backlog,
               coalesce((m.per_source->$4->>'inFlight')::float8, 0) AS in_flight,
               coalesce((m.per_source->$4->>'claims')::float8, 0) AS claims,
               coalesce((m.per_source->$4->>'duplicates')::float8, 0) AS duplicates) e) k
WHERE m.at >= $1 AND m.at <= $2 AND m.per_source->$4 ? 'aliveKeys'
GROUP BY 1 ORDER BY 1`;

/**
 * The configuration changes to mark on the charts: source edits (a TTL change named with its before and
 * after), live-key extends and replays started, from the action log (the audit history's kind/at index).
 */
const ANNOTATIONS_SQL = `
SELECT at, source, detail->>'action' AS action,
       (detail->'before'->>'ttlSeconds')::int8 AS ttl_before, (detail->'after'->>'ttlSeconds')::int8 AS ttl_after,
       (detail->'after'->>'extended')::int8 AS extended, (detail->'after'->>'total')::int8 AS total,
       coalesce((detail->'after'->>'forced')::boolean, false) AS forced
FROM audit_events
WHERE kind = 'operator' AND at >= $1 AND at <= $2 AND detail->>'action' = ANY($3::text[])
  AND coalesce(detail->>'outcome', 'ok') = 'ok' AND ($4::text IS NULL OR source = $4)
ORDER BY at LIMIT ${MAX_ANNOTATIONS}`;

const AnnotationRow = z.object({
  at: z.date(),
  source: z.string().nullable(),
  action: z.enum(ANNOTATED_ACTIONS),
  ttl_before: z.number().nullable(),
  ttl_after: z.number().nullable(),
  extended: z.number().nullable(),
  total: z.number().nullable(),
  forced: z.boolean(),
});
type AnnotationRow = z.output<typeof AnnotationRow>;

/** At most this many prune-run points (a scheduled pruner runs once a minute: 720 in 12 hours). */
const MAX_RUN_POINTS = 2000;

export async function getMetricsHistory(q: MetricsQuery, db?: Db): Promise<MetricsResponse> {
  const step = stepFor((q.to.getTime() - q.from.getTime()) / 1000);
  // From the start of the bucket that holds `from`, so the first bucket is whole.
  const start = new Date(Math.floor(q.from.getTime() / (step * 1000)) * step * 1000);

  const samples = await query(SampleRow, q.source ? SOURCE_SAMPLES_SQL : SAMPLES_SQL, q.source ? [start, q.to, step, q.source] : [start, q.to, step], db);

  // Minute steps list every run; coarser ones merge the runs that started in one bucket.
  const group = step === 60 ? "id" : "date_bin(make_interval(secs => $3), started_at, timestamptz 'epoch')";
  const runs = await query(
    RunRow,
    `SELECT min(started_at) AS started_at,
            CASE WHEN bool_and(finished_at IS NOT NULL) THEN max(finished_at) END AS finished_at,
            sum(rows)::int8 AS rows, sum(batches)::int8 AS batches,
            (sum(rows) FILTER (WHERE finished_at IS NOT NULL))::int8 AS timed_rows,
            (sum(extract(epoch FROM finished_at - started_at)) FILTER (WHERE finished_at IS NOT NULL))::float8 AS seconds,
            (array_agg(stopped ORDER BY started_at DESC))[1] AS stopped,
            count(*)::int8 AS runs,
            count(*) FILTER (WHERE stopped = 'error')::int8 AS failed,
            max(started_at) FILTER (WHERE stopped = 'error') AS last_error_at,
            (array_agg(error ORDER BY started_at DESC) FILTER (WHERE stopped = 'error'))[1] AS last_error
     FROM prune_runs
     WHERE started_at >= $1 AND started_at <= $2
     GROUP BY ${group} ORDER BY 1 LIMIT ${MAX_RUN_POINTS}`,
    // Runs from `from` itself, not the first bucket's start: the failed-runs callout sums these same points
    // (components/overview/prune-failures.ts), so the chart's "N runs" and the callout's agree.
    step === 60 ? [q.from, q.to] : [q.from, q.to, step],
    db,
  );

  const annotations = await query(AnnotationRow, ANNOTATIONS_SQL, [start, q.to, ANNOTATED_ACTIONS, q.source ?? null], db);

  return {
    from: q.from.toISOString(),
    to: q.to.toISOString(),
    ...(q.source ? { source: q.source } : {}),
    step,
    samples: samples.map(toSample),
    pruneRuns: runs.map(toRunPoint),
    annotations: annotations.map(toAnnotation),
  };
}

/** The newest sample, or null before the sampler's first (the metric_samples primary key, backwards). */
export async function getLatestSample(db?: Db): Promise<MetricSample | null> {
  const [row] = await query(
    SampleRow,
    `SELECT at, table_bytes, index_bytes, estimated_rows, alive_keys, expiry_backlog, backlog_capped, in_flight, claims, duplicates,
            alive_keys AS alive_keys_min, alive_keys AS alive_keys_max, table_bytes AS table_bytes_min, table_bytes AS table_bytes_max
     FROM metric_samples ORDER BY at DESC LIMIT 1`,
    [],
    db,
  );
  return row ? toSample(row) : null;
}

/** An action log row as a chart annotation, its label in a few words. Pure. */
export function toAnnotation(r: AnnotationRow): MetricAnnotation {
  const who = r.source ?? "all sources";
  let label: string;
  if (r.action === "source.update") {
    label = r.ttl_before !== null && r.ttl_after !== null && r.ttl_before !== r.ttl_after
      ? `${who} TTL ${formatDuration(r.ttl_before)} → ${formatDuration(r.ttl_after)}`
      : `${who} settings changed`;
  } else if (r.action === "source.extend_keys") {
    label = `${who}: ${r.extended ?? 0} live key${r.extended === 1 ? "" : "s"} extended`;
  } else {
    label = `${who} replay of ${r.total ?? 0}${r.forced ? " (forced)" : ""}`;
  }
  return { at: r.at.toISOString(), action: r.action, source: r.source, label };
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
    aliveKeysMin: r.alive_keys_min,
    aliveKeysMax: r.alive_keys_max,
    tableBytesMin: r.table_bytes_min,
    tableBytesMax: r.table_bytes_max,
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
    failed: r.failed,
    lastError: r.last_error_at ? { at: r.last_error_at.toISOString(), message: r.last_error } : null,
  };
}

/** Rows per second of finished runs: null when none finished or they were too short to time. */
export function throughput(rows: number | null, seconds: number | null): number | null {
  if (rows === null || seconds === null) return null;
  if (rows === 0) return 0;
  return seconds > 0 ? Math.round((rows / seconds) * 10) / 10 : null;
}
