/**
 * The metrics history (GET /api/v1/metrics): the sampler's per-minute samples of the dedup table and
 * the pruner's runs over a time range. Shared by the route, the console and the tests.
 */
import { z } from "zod";
import { instant } from "@/lib/http/fields";
import { sourceName } from "@/lib/claims/schema";

const count = z.number().int().nonnegative();

/** The console's range choices and their length. */
export const METRICS_RANGES = { "1h": 3600, "24h": 86400, "7d": 7 * 86400, "30d": 30 * 86400 } as const;
export type MetricsRange = keyof typeof METRICS_RANGES;
export const metricsRange = z.enum(Object.keys(METRICS_RANGES) as [MetricsRange, ...MetricsRange[]]);
export const DEFAULT_METRICS_RANGE: MetricsRange = "24h";

/** The longest range one request may ask for (samples are kept 30 days; a day of slack for the edges). */
export const MAX_RANGE_SECONDS = 31 * 86400;

/** `?from&to&source`: ISO timestamps; to defaults to now, from to 24 hours before to; source: only its figures. */
export const metricsQuery = z
  .object({ from: instant.optional(), to: instant.optional(), source: sourceName.optional() })
  .transform(({ from, to, source }, ctx) => {
    const toDate = to ? new Date(to) : new Date();
    const fromDate = from ? new Date(from) : new Date(toDate.getTime() - 86400_000);
    if (fromDate.getTime() >= toDate.getTime()) {
      ctx.addIssue({ code: "custom", path: ["from"], message: "must be before to" });
      return z.NEVER;
    }
    if (toDate.getTime() - fromDate.getTime() > MAX_RANGE_SECONDS * 1000) {
      ctx.addIssue({ code: "custom", path: ["from"], message: `the range from..to may span at most ${MAX_RANGE_SECONDS / 86400} days` });
      return z.NEVER;
    }
    return { from: fromDate, to: toDate, ...(source ? { source } : {}) };
  });
export type MetricsQuery = z.output<typeof metricsQuery>;

/**
 * One sample: the dedup table at one minute. For long ranges, one bucket of `step` seconds instead:
 * sizes and row counts are the bucket's average, backlog and in-flight its maximum (peaks matter), claims
 * and duplicates its sum.
 */
export const metricSampleSchema = z.object({
  /** The sample's minute (or the bucket's start). */
  at: instant,
  /** dedup_keys on disk: heap, TOAST and indexes, all partitions. */
  tableBytes: count,
  /** The indexes' share of tableBytes. */
  indexBytes: count,
  /** Rows in the table, alive and expired (exact on small tables, the planner's estimate on large ones). */
  estimatedRows: count,
  /** Keys whose expiry is still ahead (exact on small tables, else estimatedRows − expiryBacklog). */
  aliveKeys: count,
  /** Keys past their expiry the pruner has not deleted yet, counted up to a cap. */
  expiryBacklog: count,
  /** The backlog count stopped at its cap: the backlog is at least expiryBacklog. */
  backlogCapped: z.boolean(),
  /** Alive keys held under a lease (status processing). */
  inFlight: count,
  /** New keys (claim outcome `claimed`) in the minute(s) before `at`. */
  claims: count,
  /** Deliveries answered `duplicate` in the minute(s) before `at`. */
  duplicates: count,
  /** The lowest and highest minute of aliveKeys and tableBytes in the bucket (equal to the value at one minute a point). */
  aliveKeysMin: count,
  aliveKeysMax: count,
  tableBytesMin: count,
  tableBytesMax: count,
});
export type MetricSample = z.infer<typeof metricSampleSchema>;

/** One pruning run (or, for long ranges, the runs started in one bucket, summed). */
export const pruneRunPointSchema = z.object({
  startedAt: instant,
  /** null while the run is going. */
  finishedAt: instant.nullable(),
  rows: count,
  batches: count,
  /** rows ÷ run time; null while the run is going or when it was too short to time. */
  rowsPerSecond: z.number().nonnegative().nullable(),
  /** Why the run ended (drained, time_budget, error, shutdown); for a bucket, the last run's. */
  stopped: z.string().nullable(),
  /** Runs merged into this point (1 unless the range is bucketed). */
  runs: count,
  /** Of them, the runs that ended with an error; the Overview's failed-pruning callout sums these (one count, the chart's). */
  failed: count,
  /** The newest failed run of the point (its start and error), or null when none failed. */
  lastError: z.object({ at: instant, message: z.string().nullable() }).nullable(),
});
export type PruneRunPoint = z.infer<typeof pruneRunPointSchema>;

export const ANNOTATED_ACTIONS = ["source.update", "source.extend_keys", "replay.start"] as const;

/** A configuration change marked on the charts' time axis (Grafana's annotations): from the action log. */
export const metricAnnotationSchema = z.object({
  at: instant,
  action: z.enum(ANNOTATED_ACTIONS),
  source: z.string().nullable(),
  /** What changed, in a few words: "orders TTL 8h5m → 7d", "orders: 412 live keys extended", "orders replay of 6 (forced)". */
  label: z.string(),
});
export type MetricAnnotation = z.infer<typeof metricAnnotationSchema>;

export const metricsResponseSchema = z.object({
  from: instant,
  to: instant,
  /** With `?source=`: the samples are this source's (its keys, its estimated share of the bytes). */
  source: z.string().optional(),
  /** Seconds per sample: 60 for ranges up to a day, more for longer ones (see stepFor). */
  step: z.number().int().positive(),
  samples: z.array(metricSampleSchema),
  pruneRuns: z.array(pruneRunPointSchema),
  /** TTL edits and other source changes, live-key extends and replays started in the range (of the source, with `?source=`), oldest first. */
  annotations: z.array(metricAnnotationSchema),
});
export type MetricsResponse = z.infer<typeof metricsResponseSchema>;
