-- Retention: per-source policy fields, the pruner's run log, and the metrics sampler's samples.

-- A source's preset (documentation of where its numbers came from) and its dead-letter retention, which
-- the invariant checks compare with the key TTL (dead letters must not outlive the keys that guard them).
ALTER TABLE "sources"
    ADD COLUMN "preset" TEXT,
    ADD COLUMN "dead_letter_retention_seconds" INTEGER
        CHECK ("dead_letter_retention_seconds" IS NULL OR "dead_letter_retention_seconds" BETWEEN 1 AND 31536000);

-- In-flight claims are counted by the sampler through this small partial index, never by a table scan.
CREATE INDEX "dedup_keys_in_flight_idx" ON "dedup_keys" ("lease_expires_at") WHERE "status" = 'processing';

-- One row per pruning run: what feeds "cleanup throughput".
CREATE TABLE "prune_runs" (
    "id" BIGSERIAL PRIMARY KEY,
    "started_at" TIMESTAMPTZ(6) NOT NULL DEFAULT clock_timestamp(),
    "finished_at" TIMESTAMPTZ(6),
    "mode" TEXT NOT NULL CHECK ("mode" IN ('batch', 'partition')),
    "trigger" TEXT NOT NULL CHECK ("trigger" IN ('schedule', 'cli', 'api', 'external')),
    "actor" TEXT,
    "batches" INTEGER NOT NULL DEFAULT 0,
    "rows" BIGINT NOT NULL DEFAULT 0,
    "partitions_dropped" INTEGER NOT NULL DEFAULT 0,
    -- drained | time_budget | error
    "stopped" TEXT,
    "error" TEXT
);
CREATE INDEX "prune_runs_started_at_idx" ON "prune_runs" ("started_at" DESC);

-- One row per minute, written by whichever instance holds the sampler's advisory lock.
CREATE TABLE "metric_samples" (
    "at" TIMESTAMPTZ(6) NOT NULL PRIMARY KEY,
    "table_bytes" BIGINT NOT NULL,
    "index_bytes" BIGINT NOT NULL,
    "estimated_rows" BIGINT NOT NULL,
    "alive_keys" BIGINT NOT NULL,
    "expiry_backlog" BIGINT NOT NULL,
    -- The backlog count stops at a cap (so a huge backlog cannot make sampling slow); true when it hit it.
    "backlog_capped" BOOLEAN NOT NULL DEFAULT false,
    "in_flight" BIGINT NOT NULL,
    "claims" BIGINT NOT NULL,
    "duplicates" BIGINT NOT NULL,
    -- Per source, where cheap: { "<source>": { "claims": n, "duplicates": n } } from claim_counts.
    "per_source" JSONB
);
