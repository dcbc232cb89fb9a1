-- Dead letters from wherever they fail (issue 26): raw intake, real sizes, BullMQ and NATS JetStream inlets.

-- sender_headers: the headers of a raw intake worth keeping (delivery id, event type, signatures), as
-- [{"name", "value"}, …] in the order received; shown on the letter's page, never sent on a replay.
-- origin: where a letter from a BullMQ or NATS inlet came from (the job's queue, id, name, stack trace and
-- timestamps; the stream, subject, sequence and headers), so its replay can put it back. (A RabbitMQ
-- letter keeps its origin in origin_exchange / origin_routing_key.)
ALTER TABLE "dead_letters"
    ADD COLUMN "sender_headers" JSONB,
    ADD COLUMN "origin" JSONB;

-- A payload over 1 MiB is written in chunks of 1 MiB, one statement each (lib/deadletters/payload-store.ts),
-- and the statement that stores its letter assembles them and deletes them: no statement carries more than
-- a chunk, and the server never holds a second copy of the payload. Chunks of an upload whose letter was
-- never stored (the request failed after them) are deleted after an hour by the dead-letter pruning.
CREATE TABLE "payload_uploads" (
    "upload_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "chunk" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    PRIMARY KEY ("upload_id", "seq")
);
CREATE INDEX "payload_uploads_created_idx" ON "payload_uploads" ("created_at");

-- Inlets of three kinds: a RabbitMQ queue (amqp), a BullMQ queue's failed jobs (bullmq), a NATS JetStream
-- consumer's MAX_DELIVERIES advisories (nats). url_enc holds the AMQP, Redis or NATS URL; queue names what
-- is consumed (the AMQP or BullMQ queue, `<stream>/<consumer>` for NATS); settings the kind's own
-- (bullmq: prefix; nats: stream, consumer, advisory stream). `position`: how far a BullMQ inlet has read
-- the failed set (score and job id), so each pass starts where the last one ended.
ALTER TABLE "inlets"
    ADD COLUMN "kind" TEXT NOT NULL DEFAULT 'amqp' CHECK ("kind" IN ('amqp', 'bullmq', 'nats')),
    ADD COLUMN "settings" JSONB NOT NULL DEFAULT '{}',
    ADD COLUMN "position" TEXT;

-- Replay destinations of those kinds: bullmq(s):// re-adds a job, nats(s):// publishes to JetStream.
ALTER TABLE "sources"
    DROP CONSTRAINT "sources_replay_destination_check",
    ADD CONSTRAINT "sources_replay_destination_check"
        CHECK ("replay_destination" IS NULL OR "replay_destination" ~ '^(https?|amqps?|bullmqs?|nats|tls)://');
