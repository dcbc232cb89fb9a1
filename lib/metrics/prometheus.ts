/**
 * The Prometheus exposition of GET /metrics (app/metrics/route.ts), on a private prom-client Registry.
 *
 * Cheap by construction, whatever the size of the dedup table: claim outcomes and the claim latency
 * histogram are in-process (an in-memory increment on the claim path, lib/metrics/claim-counts.ts and
 * lib/server/fast-routes.ts); the table's size, rows and expiry backlog come from the latest
 * metric_samples row (written by the sampler, lib/metrics/sampler.ts), never counted on scrape; prune runs,
 * replay items and pending dead letters are small grouped counts, all in one round trip. The health of each
 * unfinished replay (running or paused) is decided by the one pure function the API, the Overview and the
 * notifications use (lib/replay/health.ts replayHealth), from the same columns, read in that round trip; a
 * finished replay's outcome by the SQL twin of the one that decides it (lib/replay/outcome.ts
 * outcomeCondition), over the replays finished in the last 24 hours.
 *
 * Counters and the histogram are per process (they restart at 0, as Prometheus expects of counters);
 * scrape every instance. Inlet lag (lib/inlets: AMQP, BullMQ, NATS) is what the consumers last reported on
 * the inlets table (every KEYWARD_INLET_POLL_MS).
 *
 * What the alerts (deploy/prometheus/keyward-rules.yml) read comes the same cheap ways: claim answers by
 * status and keys pruned are in-process counters (ops-counters.ts); prune failures and the last success
 * read the newest prune_runs through their started_at index; the oldest pending dead letter rides the
 * pending count; late duplicates of the last hour are an index range per source; keys at risk come from
 * the latest sample (the sampler looks them up once a minute, on one instance); jobs from this process's
 * registries.
 */
import "server-only";
import { z } from "zod";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { query } from "@/lib/db/sql";
import { readStatus } from "@/lib/db/read";
import { loadEnv } from "@/lib/config/env";
import { processGlobal } from "@/lib/process-global";
import { claimOutcomeTotals } from "./claim-counts";
import { apiKeyCacheStats } from "@/lib/auth/api-key-cache";
import { redisActive, redisConfigured, redisStats } from "@/lib/claims/redis";
import { countClaimResponse, opsCounters } from "./ops-counters";
import { jobStatuses, wedgedReason } from "@/lib/jobs/registry";
import { OUTCOMES as ITEM_OUTCOMES } from "@/lib/replay/schema";
import { dueAtSql, HEALTH_STATES, replayHealth } from "@/lib/replay/health";
import { outcomeCondition, REPLAY_OUTCOMES } from "@/lib/replay/outcome";

type Metrics = {
  registry: Registry;
  claims: Counter<"source" | "outcome">;
  claimSeconds: Histogram<"route">;
  tableBytes: Gauge<"part">;
  tableRows: Gauge;
  backlog: Gauge;
  backlogCapped: Gauge;
  sampleTime: Gauge;
  pruneRuns: Gauge<"outcome">;
  pruneRows: Gauge<"outcome">;
  replayItems: Gauge<"outcome">;
  replaysRunning: Gauge<"source" | "health">;
  replaysFinished: Gauge<"source" | "outcome">;
  deadLetters: Gauge<"source">;
  unidentified: Gauge<"source">;
  inletLagMessages: Gauge<"source" | "kind" | "inlet">;
  inletLagSeconds: Gauge<"source" | "kind" | "inlet">;
  inletUp: Gauge<"source" | "kind" | "inlet">;
  keyCacheLookups: Gauge<"result">;
  keyCacheTrusted: Gauge;
  redisLookups: Gauge<"result">;
  redisUp: Gauge;
  readReplicaUp: Gauge;
  claimResponses: Counter<"route" | "code">;
  prunedKeys: Counter;
  pruneFailures: Gauge;
  pruneLastSuccess: Gauge;
  deadLetterAge: Gauge<"source">;
  keysAtRisk: Gauge<"source" | "risk">;
  lateDuplicates: Gauge<"source">;
  jobLastSuccess: Gauge<"name">;
  jobWedged: Gauge<"name">;
};

function create(): Metrics {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    claims: new Counter({
      name: "keyward_claims_total",
      help: "Claim outcomes answered by this process, by source and outcome (claimed, duplicate, in_flight, payload_mismatch).",
      labelNames: ["source", "outcome"],
      registers,
    }),
    claimSeconds: new Histogram({
      name: "keyward_claim_duration_seconds",
      help: "Time to answer a claim request (POST /api/v1/claims, /api/v1/claims/batch) in this process, authentication and database included.",
      labelNames: ["route"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    tableBytes: new Gauge({
      name: "keyward_dedup_table_bytes",
      help: "Size of the dedup table (part=table: heap and TOAST; part=index: its indexes), from the latest sample.",
      labelNames: ["part"],
      registers,
    }),
    tableRows: new Gauge({ name: "keyward_dedup_table_rows", help: "Estimated rows of the dedup table, from the latest sample.", registers }),
    backlog: new Gauge({
      name: "keyward_expiry_backlog",
      help: "Expired keys not yet pruned, from the latest sample (counted up to a cap, see keyward_expiry_backlog_capped).",
      registers,
    }),
    backlogCapped: new Gauge({ name: "keyward_expiry_backlog_capped", help: "1 when the latest backlog count stopped at its cap.", registers }),
    sampleTime: new Gauge({
      name: "keyward_metrics_sample_timestamp_seconds",
      help: "When the latest metric_samples row (table size, rows, backlog) was taken, Unix seconds.",
      registers,
    }),
    pruneRuns: new Gauge({
      name: "keyward_prune_runs",
      help: "Prune runs recorded in prune_runs, by how they stopped (drained, time_budget, error, running).",
      labelNames: ["outcome"],
      registers,
    }),
    pruneRows: new Gauge({
      name: "keyward_prune_rows",
      help: "Expired keys deleted by the prune runs recorded in prune_runs, by how the run stopped.",
      labelNames: ["outcome"],
      registers,
    }),
    replayItems: new Gauge({
      name: "keyward_replay_items",
      help: "Replay items by outcome (pending, delivering, delivered, failed, skipped_unsafe, cancelled).",
      labelNames: ["outcome"],
      registers,
    }),
    replaysRunning: new Gauge({
      name: "keyward_replays_running",
      help: "Unfinished replays (running or paused) by source and health (lib/replay/health.ts): ok, failing (its last attempts all failed: the destination refuses or does not answer), stalled (running, and no result recorded for too long: no worker drives it, or deliveries hang). 0 for every source and health with none.",
      labelNames: ["source", "health"],
      registers,
    }),
    replaysFinished: new Gauge({
      name: "keyward_replay_last_finished_timestamp_seconds",
      help: "When the newest replay of the source that ended with this outcome (lib/replay/outcome.ts: succeeded, partial, failed, cancelled) finished, Unix seconds; only outcomes some replay of the source ended with in the last 24 hours.",
      labelNames: ["source", "outcome"],
      registers,
    }),
    deadLetters: new Gauge({ name: "keyward_dead_letters_pending", help: "Dead letters waiting for a replay, by source.", labelNames: ["source"], registers }),
    unidentified: new Gauge({
      name: "keyward_dead_letters_unidentified",
      help: "Dead letters from inlets without a usable event id (kept, never replayed), by source.",
      labelNames: ["source"],
      registers,
    }),
    inletLagMessages: new Gauge({
      name: "keyward_inlet_lag_messages",
      help: "Messages waiting for an inlet when its consumer last looked: ready messages in its AMQP queue, failed BullMQ jobs past its position, NATS JetStream advisories not yet delivered (kind: amqp, bullmq, nats; inlet: the inlet's id).",
      labelNames: ["source", "kind", "inlet"],
      registers,
    }),
    inletLagSeconds: new Gauge({
      name: "keyward_inlet_lag_seconds",
      help: "How long after its dead-lettering the inlet's last stored message was stored (kind: amqp, bullmq, nats; inlet: the inlet's id).",
      labelNames: ["source", "kind", "inlet"],
      registers,
    }),
    inletUp: new Gauge({
      name: "keyward_inlet_up",
      help: "1 while the inlet's consumer reports it is consuming, 0 when it reports an error or has not started (kind: amqp, bullmq, nats; inlet: the inlet's id).",
      labelNames: ["source", "kind", "inlet"],
      registers,
    }),
    // Counters in meaning (they only grow), exposed as gauges set from the cache's own totals at scrape.
    keyCacheLookups: new Gauge({
      name: "keyward_api_key_cache_lookups_total",
      help: "API-key verifications by this process: answered from the in-process cache (hit) or read from the database (miss).",
      labelNames: ["result"],
      registers,
    }),
    redisLookups: new Gauge({
      name: "keyward_redis_lookups_total",
      help: "Claim lookups in the Redis first line by this process: answered duplicate (hit), sent to PostgreSQL (miss), not asked because the source's recent claims were rarely duplicates (skipped), failed or too slow (error), entries written (write), entries found but refused because their generation or namespace is over (stale: what Redis forgot or a release moved, answered by PostgreSQL), releases that could not reach Redis and moved every server to a new namespace (move).",
      labelNames: ["result"],
      registers,
    }),
    keyCacheTrusted: new Gauge({
      name: "keyward_api_key_cache_trusted",
      help: "1 while the API-key cache may answer from memory (its listener confirmed a ping within 750 ms), else 0.",
      registers,
    }),
    redisUp: new Gauge({
      name: "keyward_redis_up",
      help: "With KEYWARD_REDIS_URL: 1 while this process asks Redis (connected, not tripped by errors), 0 while it goes to PostgreSQL alone. Absent without Redis.",
      registers: [], // registered at the first scrape that finds Redis configured: absent otherwise
    }),
    readReplicaUp: new Gauge({
      name: "keyward_read_replica_up",
      help: "With KEYWARD_READ_DATABASE_URL: 1 while this process sends the console's reads to the read replica, 0 while they fall back to the primary (the replica did not answer). Absent without a replica.",
      registers: [], // registered at the first scrape that finds a replica configured: absent otherwise
    }),
    claimResponses: new Counter({
      name: "keyward_claim_responses_total",
      help: "Answers of POST /api/v1/claims (route=claim) and /claims/batch (route=batch) by this process, by HTTP status code (code).",
      labelNames: ["route", "code"],
      registers,
    }),
    prunedKeys: new Counter({
      name: "keyward_pruned_keys_total",
      help: "Expired keys deleted by the prune runs of this process (batches, and the rows of dropped partitions in partition mode).",
      registers,
    }),
    pruneFailures: new Gauge({
      name: "keyward_prune_consecutive_failures",
      help: "Prune runs (any instance, prune_runs) that ended in an error since the last one that did not.",
      registers,
    }),
    pruneLastSuccess: new Gauge({
      name: "keyward_prune_last_success_timestamp_seconds",
      help: "When the last prune run (any instance) that did not end in an error finished, Unix seconds. Absent before the first.",
      registers,
    }),
    deadLetterAge: new Gauge({
      name: "keyward_dead_letters_oldest_pending_age_seconds",
      help: "How long the oldest dead letter waiting for a replay has been stored, by source (absent when none waits).",
      labelNames: ["source"],
      registers,
    }),
    keysAtRisk: new Gauge({
      name: "keyward_dead_letter_keys_at_risk",
      help: "Pending dead letters whose keys are at risk, by source, from the latest sample: risk=expired (the event was processed and its key is gone: a replay processes it twice), risk=expiring (its key expires within 24 h).",
      labelNames: ["source", "risk"],
      registers,
    }),
    lateDuplicates: new Gauge({
      name: "keyward_late_duplicates_last_hour",
      help: "Late duplicates (events processed twice: their key expired before a later delivery) whose late claim was in the last hour, by source.",
      labelNames: ["source"],
      registers,
    }),
    jobLastSuccess: new Gauge({
      name: "keyward_job_last_success_timestamp_seconds",
      help: "When a periodic job of this process (name: the job's name) last ended a pass without an error, Unix seconds (absent before the first).",
      labelNames: ["name"],
      registers,
    }),
    jobWedged: new Gauge({
      name: "keyward_job_wedged",
      help: "1 while a periodic job of this process (name: the job's name) is wedged (a pass running, or overdue, longer than its bound; GET /readyz fails then), else 0.",
      labelNames: ["name"],
      registers,
    }),
  };
}

// Process-wide (lib/process-global.ts): the custom server (which observes claim latency on its fast path) and Next's bundled
// route modules load separate copies of this module; both must use the one registry.
const metrics: Metrics = processGlobal("prometheus", create);

/**
 * Records how long one claim request took and its HTTP status (0: no answer was sent, the client went
 * away), called by the fast path (lib/server/fast-routes.ts).
 */
export function observeClaimSeconds(route: "claim" | "batch", seconds: number, status: number): void {
  metrics.claimSeconds.observe({ route }, seconds);
  if (status > 0) countClaimResponse(route, status);
}

/** The health of an unfinished replay (a finished one has an outcome instead: lib/replay/outcome.ts). */
const RUNNING_HEALTHS = HEALTH_STATES.filter((h) => h !== "finished");

/** One row of json columns, parsed by pg: PostgreSQL writes int8 and numeric into json as numbers, timestamptz as text. */
const DbFigures = z.object({
  sample: z
    .object({
      at: z.string(),
      table_bytes: z.number(),
      index_bytes: z.number(),
      estimated_rows: z.number(),
      expiry_backlog: z.number(),
      backlog_capped: z.boolean(),
      per_source: z.record(z.string(), z.object({ keysAtRisk: z.number().optional(), keysExpiringSoon: z.number().optional() })).nullable(),
    })
    .nullable(),
  prune: z.array(z.object({ outcome: z.string(), runs: z.number(), rows: z.number() })),
  prune_health: z.object({ last_ok: z.number().nullable(), failures: z.number() }),
  replay: z.array(z.object({ outcome: z.string(), n: z.number() })),
  running_replays: z.array(
    z.object({
      source: z.string(),
      status: z.enum(["running", "paused"]),
      rate_per_second: z.number(),
      running_since: z.string(),
      last_settled_at: z.string().nullable(),
      consecutive_failures: z.number(),
      last_error: z.string().nullable(),
      last_error_at: z.string().nullable(),
      due_at: z.string().nullable(),
    }),
  ),
  finished_replays: z.array(z.object({ source: z.string(), outcome: z.enum(REPLAY_OUTCOMES), at: z.number() })),
  db_now: z.date(),
  dead: z.array(z.object({ source: z.string(), n: z.number(), oldest_age: z.number() })),
  late: z.array(z.object({ source: z.string(), n: z.number() })),
  unidentified: z.array(z.object({ source: z.string(), n: z.number() })),
  inlets: z.array(
    z.object({ id: z.string(), source: z.string(), kind: z.string(), state: z.string(), lag_messages: z.number().nullable(), lag_seconds: z.number().nullable() }),
  ),
});

const DB_FIGURES = `
SELECT
  (SELECT row_to_json(s) FROM (
     SELECT at, table_bytes, index_bytes, estimated_rows, expiry_backlog, backlog_capped, per_source
     FROM metric_samples ORDER BY at DESC LIMIT 1) s) AS sample,
  (SELECT coalesce(json_agg(p), '[]') FROM (
     SELECT coalesce(stopped, 'running') AS outcome, count(*) AS runs, coalesce(sum(rows), 0) AS rows
     FROM prune_runs GROUP BY 1) p) AS prune,
  (SELECT row_to_json(h) FROM (
     SELECT extract(epoch FROM ok.finished_at)::float8 AS last_ok,
            (SELECT count(*) FROM prune_runs e WHERE e.stopped = 'error' AND e.started_at > coalesce(ok.started_at, '-infinity')) AS failures
     FROM (SELECT 1) one LEFT JOIN LATERAL (
       SELECT started_at, finished_at FROM prune_runs WHERE stopped IS NOT NULL AND stopped <> 'error' ORDER BY started_at DESC LIMIT 1) ok ON true) h) AS prune_health,
  (SELECT coalesce(json_agg(r), '[]') FROM (SELECT outcome, count(*) AS n FROM replay_items GROUP BY 1) r) AS replay,
  (SELECT coalesce(json_agg(u), '[]') FROM (
     SELECT source, status, rate_per_second, running_since, last_settled_at, consecutive_failures, last_error, last_error_at,
            ${dueAtSql("r")}
     FROM replays r WHERE status IN ('running', 'paused')) u) AS running_replays,
  (SELECT coalesce(json_agg(f), '[]') FROM (
     SELECT source, outcome, extract(epoch FROM max(finished_at))::float8 AS at FROM (
       SELECT r.source, r.finished_at,
              CASE ${REPLAY_OUTCOMES.map((o) => `WHEN ${outcomeCondition(o, "d.n")} THEN '${o}'`).join(" ")} END AS outcome
       FROM replays r
       CROSS JOIN LATERAL (SELECT count(*) AS n FROM replay_items i WHERE i.replay_id = r.id AND i.outcome = 'delivered') d
       WHERE r.status IN ('completed', 'cancelled') AND r.finished_at > now() - interval '24 hours') x
     WHERE outcome IS NOT NULL GROUP BY 1, 2) f) AS finished_replays,
  now() AS db_now,
  (SELECT coalesce(json_agg(d), '[]') FROM (
     SELECT source, count(*) AS n, extract(epoch FROM now() - min(received_at))::float8 AS oldest_age
     FROM dead_letters WHERE status = 'pending' GROUP BY 1) d) AS dead,
  (SELECT coalesce(json_agg(l), '[]') FROM (
     SELECT s.name AS source, (SELECT count(*) FROM late_duplicates d WHERE d.source = s.name AND d.late_claim_at > now() - interval '1 hour') AS n
     FROM sources s) l) AS late,
  (SELECT coalesce(json_agg(u), '[]') FROM (
     SELECT source, count(*) AS n FROM dead_letters WHERE status = 'unidentified' GROUP BY 1) u) AS unidentified,
  (SELECT coalesce(json_agg(i), '[]') FROM (
     SELECT id, source, kind, state, lag_messages, last_message_age_seconds AS lag_seconds FROM inlets) i) AS inlets`;

/** The exposition text (Prometheus text format 0.0.4) and its content type. */
export async function renderMetrics(): Promise<{ text: string; contentType: string }> {
  const [db] = await query(DbFigures, DB_FIGURES);
  const m = metrics;

  m.claims.reset();
  for (const [source, counts] of claimOutcomeTotals()) {
    for (const [outcome, n] of Object.entries(counts)) if (n > 0) m.claims.inc({ source, outcome }, n);
  }

  for (const g of [
    m.tableBytes, m.tableRows, m.backlog, m.backlogCapped, m.sampleTime, m.pruneRuns, m.pruneRows, m.replayItems, m.replaysRunning, m.replaysFinished, m.deadLetters,
    m.unidentified, m.inletLagMessages, m.inletLagSeconds, m.inletUp, m.redisUp, m.pruneFailures, m.pruneLastSuccess,
    m.deadLetterAge, m.keysAtRisk, m.lateDuplicates, m.jobLastSuccess, m.jobWedged,
  ]) g.reset();
  if (db.sample) {
    m.tableBytes.set({ part: "table" }, Number(db.sample.table_bytes));
    m.tableBytes.set({ part: "index" }, Number(db.sample.index_bytes));
    m.tableRows.set(Number(db.sample.estimated_rows));
    m.backlog.set(Number(db.sample.expiry_backlog));
    m.backlogCapped.set(db.sample.backlog_capped ? 1 : 0);
    m.sampleTime.set(Date.parse(db.sample.at) / 1000);
    for (const [source, f] of Object.entries(db.sample.per_source ?? {})) {
      if (f.keysAtRisk !== undefined) m.keysAtRisk.set({ source, risk: "expired" }, f.keysAtRisk);
      if (f.keysExpiringSoon !== undefined) m.keysAtRisk.set({ source, risk: "expiring" }, f.keysExpiringSoon);
    }
  }
  m.pruneFailures.set(db.prune_health.failures);
  if (db.prune_health.last_ok !== null) m.pruneLastSuccess.set(db.prune_health.last_ok);
  for (const p of db.prune) {
    m.pruneRuns.set({ outcome: p.outcome }, Number(p.runs));
    m.pruneRows.set({ outcome: p.outcome }, Number(p.rows));
  }
  // Every outcome, 0 when no item has it: the series exist before the first replay (dashboards, alerts).
  for (const outcome of ITEM_OUTCOMES) m.replayItems.set({ outcome }, 0);
  for (const r of db.replay) m.replayItems.set({ outcome: r.outcome }, Number(r.n));
  // Every source × health, 0 when none: the alerts' and the dashboard's series exist before the first replay.
  for (const l of db.late) for (const health of RUNNING_HEALTHS) m.replaysRunning.set({ source: l.source, health }, 0);
  const timeoutMs = loadEnv().KEYWARD_REPLAY_TIMEOUT_MS;
  for (const r of db.running_replays) {
    const date = (t: string | null) => (t === null ? null : new Date(t));
    const { state } = replayHealth(
      {
        status: r.status,
        ratePerSecond: r.rate_per_second,
        runningSince: new Date(r.running_since),
        lastSettledAt: date(r.last_settled_at),
        consecutiveFailures: r.consecutive_failures,
        lastError: r.last_error,
        lastErrorAt: date(r.last_error_at),
        dueAt: date(r.due_at),
      },
      db.db_now,
      timeoutMs,
    );
    m.replaysRunning.inc({ source: r.source, health: state }, 1);
  }
  for (const f of db.finished_replays) m.replaysFinished.set({ source: f.source, outcome: f.outcome }, f.at);
  for (const d of db.dead) {
    m.deadLetters.set({ source: d.source }, Number(d.n));
    m.deadLetterAge.set({ source: d.source }, d.oldest_age);
  }
  for (const l of db.late) m.lateDuplicates.set({ source: l.source }, l.n);
  for (const u of db.unidentified) m.unidentified.set({ source: u.source }, Number(u.n));
  for (const i of db.inlets) {
    const labels = { source: i.source, kind: i.kind, inlet: i.id };
    m.inletUp.set(labels, i.state === "consuming" ? 1 : 0);
    if (i.lag_messages !== null) m.inletLagMessages.set(labels, Number(i.lag_messages));
    if (i.lag_seconds !== null) m.inletLagSeconds.set(labels, i.lag_seconds);
  }
  const keys = apiKeyCacheStats();
  m.keyCacheLookups.set({ result: "hit" }, keys.hits);
  m.keyCacheLookups.set({ result: "miss" }, keys.misses);
  m.keyCacheTrusted.set(keys.trusted ? 1 : 0);
  const redis = redisStats();
  m.redisLookups.set({ result: "hit" }, redis.hits);
  m.redisLookups.set({ result: "miss" }, redis.misses);
  m.redisLookups.set({ result: "skipped" }, redis.skipped);
  m.redisLookups.set({ result: "error" }, redis.errors);
  m.redisLookups.set({ result: "write" }, redis.writes);
  m.redisLookups.set({ result: "stale" }, redis.stale);
  m.redisLookups.set({ result: "move" }, redis.moves);
  if (redisConfigured()) {
    if (!m.registry.getSingleMetric("keyward_redis_up")) m.registry.registerMetric(m.redisUp);
    m.redisUp.set(redisActive() ? 1 : 0);
  }
  const reads = readStatus();
  if (loadEnv().KEYWARD_READ_DATABASE_URL) {
    if (!m.registry.getSingleMetric("keyward_read_replica_up")) m.registry.registerMetric(m.readReplicaUp);
    m.readReplicaUp.set(reads.target === "replica" ? 1 : 0);
  }

  const ops = opsCounters();
  m.claimResponses.reset();
  // The failures the alerts divide by exist at 0 from the start (a ratio of absent series is no series).
  for (const route of ["claim", "batch"]) for (const code of ["500", "503"]) m.claimResponses.inc({ route, code }, 0);
  for (const [key, n] of ops.claimResponses) {
    const [route, code] = key.split(" ");
    m.claimResponses.inc({ route, code }, n);
  }
  m.prunedKeys.reset();
  m.prunedKeys.inc(ops.prunedKeys);
  const now = Date.now();
  for (const job of jobStatuses()) {
    if (job.lastSucceededAt !== null) m.jobLastSuccess.set({ name: job.name }, job.lastSucceededAt / 1000);
    m.jobWedged.set({ name: job.name }, wedgedReason(job, now) ? 1 : 0);
  }

  return { text: await m.registry.metrics(), contentType: m.registry.contentType };
}
