/**
 * The Prometheus exposition of GET /metrics (app/metrics/route.ts), on a private prom-client Registry.
 *
 * Cheap by construction, whatever the size of the dedup table: claim outcomes and the claim latency
 * histogram are in-process (an in-memory increment on the claim path, lib/metrics/claim-counts.ts and
 * lib/server/fast-routes.ts); the table's size, rows and expiry backlog come from the latest
 * metric_samples row (written by the sampler, lib/metrics/sampler.ts), never counted on scrape; prune runs,
 * replay items and pending dead letters are small grouped counts, all in one round trip.
 *
 * Counters and the histogram are per process (they restart at 0, as Prometheus expects of counters);
 * scrape every instance. Inlet lag (RabbitMQ inlets, lib/inlets) is what the consumers last reported on
 * the inlets table (every KEYWARD_INLET_POLL_MS).
 */
import "server-only";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { query } from "../db/sql";
import { processGlobal } from "../process-global";
import { claimOutcomeTotals } from "./claim-counts";
import { apiKeyCacheStats } from "../auth/api-key-cache";
import { redisStats } from "../claims/redis";

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
  deadLetters: Gauge<"source">;
  unidentified: Gauge<"source">;
  inletLagMessages: Gauge<"source" | "inlet">;
  inletLagSeconds: Gauge<"source" | "inlet">;
  inletUp: Gauge<"source" | "inlet">;
  keyCacheLookups: Gauge<"result">;
  keyCacheTrusted: Gauge;
  redisLookups: Gauge<"result">;
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
    deadLetters: new Gauge({ name: "keyward_dead_letters_pending", help: "Dead letters waiting for a replay, by source.", labelNames: ["source"], registers }),
    unidentified: new Gauge({
      name: "keyward_dead_letters_unidentified",
      help: "Dead letters from RabbitMQ inlets without a usable event id (kept, never replayed), by source.",
      labelNames: ["source"],
      registers,
    }),
    inletLagMessages: new Gauge({
      name: "keyward_inlet_lag_messages",
      help: "Messages waiting in a RabbitMQ inlet's queue when its consumer last looked (inlet: the inlet's id).",
      labelNames: ["source", "inlet"],
      registers,
    }),
    inletLagSeconds: new Gauge({
      name: "keyward_inlet_lag_seconds",
      help: "How long after its dead-lettering the inlet's last stored message was stored.",
      labelNames: ["source", "inlet"],
      registers,
    }),
    inletUp: new Gauge({
      name: "keyward_inlet_up",
      help: "1 while the inlet's consumer reports it is consuming, 0 when it reports an error or has not started.",
      labelNames: ["source", "inlet"],
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
      help: "Claim lookups in the Redis first line by this process: answered duplicate (hit), sent to PostgreSQL (miss), not asked because the source's recent claims were rarely duplicates (skipped), failed or too slow (error), entries written (write).",
      labelNames: ["result"],
      registers,
    }),
    keyCacheTrusted: new Gauge({
      name: "keyward_api_key_cache_trusted",
      help: "1 while the API-key cache may answer from memory (its listener confirmed a ping within 750 ms), else 0.",
      registers,
    }),
  };
}

// Process-wide (lib/process-global.ts): the custom server (which observes claim latency on its fast path) and Next's bundled
// route modules load separate copies of this module; both must use the one registry.
const metrics: Metrics = processGlobal("prometheus", create);

/** Records how long one claim request took (called by the fast path, lib/server/fast-routes.ts). */
export function observeClaimSeconds(route: "claim" | "batch", seconds: number): void {
  metrics.claimSeconds.observe({ route }, seconds);
}

type DbFigures = {
  sample: { at: string; table_bytes: string; index_bytes: string; estimated_rows: string; expiry_backlog: string; backlog_capped: boolean } | null;
  prune: { outcome: string; runs: string; rows: string }[];
  replay: { outcome: string; n: string }[];
  dead: { source: string; n: string }[];
  unidentified: { source: string; n: string }[];
  inlets: { id: string; source: string; state: string; lag_messages: string | null; lag_seconds: number | null }[];
};

const DB_FIGURES = `
SELECT
  (SELECT row_to_json(s) FROM (
     SELECT at, table_bytes, index_bytes, estimated_rows, expiry_backlog, backlog_capped
     FROM metric_samples ORDER BY at DESC LIMIT 1) s) AS sample,
  (SELECT coalesce(json_agg(p), '[]') FROM (
     SELECT coalesce(stopped, 'running') AS outcome, count(*) AS runs, coalesce(sum(rows), 0) AS rows
     FROM prune_runs GROUP BY 1) p) AS prune,
  (SELECT coalesce(json_agg(r), '[]') FROM (SELECT outcome, count(*) AS n FROM replay_items GROUP BY 1) r) AS replay,
  (SELECT coalesce(json_agg(d), '[]') FROM (
     SELECT source, count(*) AS n FROM dead_letters WHERE status = 'pending' GROUP BY 1) d) AS dead,
  (SELECT coalesce(json_agg(u), '[]') FROM (
     SELECT source, count(*) AS n FROM dead_letters WHERE status = 'unidentified' GROUP BY 1) u) AS unidentified,
  (SELECT coalesce(json_agg(i), '[]') FROM (
     SELECT id, source, state, lag_messages, last_message_age_seconds AS lag_seconds FROM inlets) i) AS inlets`;

/** The exposition text (Prometheus text format 0.0.4) and its content type. */
export async function renderMetrics(): Promise<{ text: string; contentType: string }> {
  const [db] = await query<DbFigures>(DB_FIGURES);
  const m = metrics;

  m.claims.reset();
  for (const [source, counts] of claimOutcomeTotals()) {
    for (const [outcome, n] of Object.entries(counts)) if (n > 0) m.claims.inc({ source, outcome }, n);
  }

  for (const g of [
    m.tableBytes, m.tableRows, m.backlog, m.backlogCapped, m.sampleTime, m.pruneRuns, m.pruneRows, m.replayItems, m.deadLetters,
    m.unidentified, m.inletLagMessages, m.inletLagSeconds, m.inletUp,
  ]) g.reset();
  if (db.sample) {
    m.tableBytes.set({ part: "table" }, Number(db.sample.table_bytes));
    m.tableBytes.set({ part: "index" }, Number(db.sample.index_bytes));
    m.tableRows.set(Number(db.sample.estimated_rows));
    m.backlog.set(Number(db.sample.expiry_backlog));
    m.backlogCapped.set(db.sample.backlog_capped ? 1 : 0);
    m.sampleTime.set(Date.parse(db.sample.at) / 1000);
  }
  for (const p of db.prune) {
    m.pruneRuns.set({ outcome: p.outcome }, Number(p.runs));
    m.pruneRows.set({ outcome: p.outcome }, Number(p.rows));
  }
  for (const r of db.replay) m.replayItems.set({ outcome: r.outcome }, Number(r.n));
  for (const d of db.dead) m.deadLetters.set({ source: d.source }, Number(d.n));
  for (const u of db.unidentified) m.unidentified.set({ source: u.source }, Number(u.n));
  for (const i of db.inlets) {
    const labels = { source: i.source, inlet: i.id };
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

  return { text: await m.registry.metrics(), contentType: m.registry.contentType };
}
