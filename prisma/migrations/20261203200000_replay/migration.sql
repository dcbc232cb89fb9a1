-- Safe replay (issue 6): dead-letter intake, replay destinations and signing secrets per source, stored
-- preflights, and replays whose state (per item) lives here so a restarted server resumes them.

-- Where a source's dead letters are re-driven to, and the Standard Webhooks secret that signs them. The
-- secret is stored encrypted (AES-256-GCM, key derived from the auth secret; lib/sources/signing-secret.ts).
ALTER TABLE "sources"
    ADD COLUMN "replay_destination" TEXT
        CHECK ("replay_destination" IS NULL OR "replay_destination" ~ '^https?://'),
    ADD COLUMN "signing_secret_enc" TEXT,
    ADD COLUMN "signing_secret_set_at" TIMESTAMPTZ(6);

-- Events a consumer gave up on. status: pending (may be replayed), replaying (held by a running replay),
-- delivered (a replay delivered it: settled, pruned after the source's dead-letter retention).
CREATE TABLE "dead_letters" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    "source" TEXT NOT NULL REFERENCES "sources" ("name") ON UPDATE CASCADE,
    "event_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    -- json, not jsonb: kept exactly as serialized at intake, so a replay sends the same bytes.
    "payload" JSON NOT NULL,
    "payload_bytes" INTEGER NOT NULL,
    "error" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0 CHECK ("attempts" >= 0),
    -- Millisecond precision (set so by the intake), so an ISO cursor names a row exactly.
    "failed_at" TIMESTAMPTZ(6) NOT NULL,
    "queue" TEXT,
    "status" TEXT NOT NULL DEFAULT 'pending' CHECK ("status" IN ('pending', 'replaying', 'delivered')),
    "received_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "settled_at" TIMESTAMPTZ(6),
    "last_replay_error" TEXT,
    CONSTRAINT "dead_letters_settled_iff_delivered" CHECK (("status" = 'delivered') = ("settled_at" IS NOT NULL))
);
-- The listing (newest failure first, keyset on (failed_at, id)), per source and overall.
CREATE INDEX "dead_letters_source_failed_idx" ON "dead_letters" ("source", "failed_at" DESC, "id" DESC);
CREATE INDEX "dead_letters_failed_idx" ON "dead_letters" ("failed_at" DESC, "id" DESC);
-- Pending letters of a source (preflight selection).
CREATE INDEX "dead_letters_pending_idx" ON "dead_letters" ("source", "failed_at") WHERE "status" = 'pending';
-- Retention pruning of settled letters, oldest settlement first.
CREATE INDEX "dead_letters_settled_idx" ON "dead_letters" ("settled_at") WHERE "status" = 'delivered';

-- A preflight: the classification of a set of pending dead letters at one moment, valid 15 minutes.
CREATE TABLE "replay_preflights" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    "source" TEXT NOT NULL REFERENCES "sources" ("name") ON UPDATE CASCADE,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "valid_until" TIMESTAMPTZ(6) NOT NULL,
    "window_seconds" INTEGER NOT NULL CHECK ("window_seconds" >= 0),
    "extended_at" TIMESTAMPTZ(6),
    "created_by" TEXT NOT NULL,
    -- true when the filter selected more pending letters than one preflight holds
    "truncated" BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE "replay_preflight_items" (
    "preflight_id" UUID NOT NULL REFERENCES "replay_preflights" ("id") ON DELETE CASCADE,
    -- No foreign key to dead_letters: retention may prune a settled letter, its history stays.
    "dead_letter_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "event_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "category" TEXT NOT NULL
        CHECK ("category" IN ('alive', 'expiring', 'expired_processed', 'never_processed', 'in_flight')),
    "key_expires_at" TIMESTAMPTZ(6),
    "processed_at" TIMESTAMPTZ(6),
    "reason" TEXT NOT NULL,
    PRIMARY KEY ("preflight_id", "dead_letter_id")
);

-- A replay: which preflight, which categories, how fast. status: running | paused | cancelled | completed.
-- worker / worker_lease_until: the one process driving it (so its rate limit holds across instances);
-- a lapsed lease (the process died) lets another process, or the restarted one, take it over.
CREATE TABLE "replays" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    "source" TEXT NOT NULL REFERENCES "sources" ("name") ON UPDATE CASCADE,
    "preflight_id" UUID NOT NULL REFERENCES "replay_preflights" ("id"),
    "include" TEXT[] NOT NULL,
    "forced" BOOLEAN NOT NULL DEFAULT false,
    "force_reason" TEXT,
    "rate_per_second" INTEGER NOT NULL CHECK ("rate_per_second" BETWEEN 1 AND 500),
    "concurrency" INTEGER NOT NULL CHECK ("concurrency" BETWEEN 1 AND 32),
    "status" TEXT NOT NULL DEFAULT 'running' CHECK ("status" IN ('running', 'paused', 'cancelled', 'completed')),
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "finished_at" TIMESTAMPTZ(6),
    "total" INTEGER NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "worker" TEXT,
    "worker_lease_until" TIMESTAMPTZ(6),
    CONSTRAINT "replays_forced_has_reason" CHECK (NOT "forced" OR "force_reason" IS NOT NULL)
);
CREATE UNIQUE INDEX "replays_idempotency_key_idx" ON "replays" ("idempotency_key");
CREATE INDEX "replays_created_idx" ON "replays" ("created_at" DESC, "id" DESC);
CREATE INDEX "replays_running_idx" ON "replays" ("created_at") WHERE "status" = 'running';

-- One row per dead letter in a replay. outcome: pending → delivering (leased by a worker until
-- lease_until) → delivered | failed | skipped_unsafe | cancelled; a failed attempt with retries left goes
-- back to pending with next_attempt_at.
CREATE TABLE "replay_items" (
    "replay_id" UUID NOT NULL REFERENCES "replays" ("id") ON DELETE CASCADE,
    -- No foreign key to dead_letters: retention may prune a settled letter, the replay's results stay.
    "dead_letter_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "event_id" TEXT NOT NULL,
    "category" TEXT NOT NULL,
    "outcome" TEXT NOT NULL DEFAULT 'pending'
        CHECK ("outcome" IN ('pending', 'delivering', 'delivered', 'failed', 'skipped_unsafe', 'cancelled')),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_status" INTEGER,
    "last_error" TEXT,
    "next_attempt_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "lease_until" TIMESTAMPTZ(6),
    "leased_by" TEXT,
    "finished_at" TIMESTAMPTZ(6),
    PRIMARY KEY ("replay_id", "dead_letter_id")
);
-- What a worker leases next: due pending items and lapsed deliveries, in order.
CREATE INDEX "replay_items_work_idx" ON "replay_items" ("replay_id", "seq") WHERE "outcome" IN ('pending', 'delivering');
CREATE INDEX "replay_items_dead_letter_idx" ON "replay_items" ("dead_letter_id");
