-- RabbitMQ dead-letter inlets and AMQP replay targets (issue 16, parts 1 and 2).

-- An inlet: a RabbitMQ queue (typically the one bound to a dead-letter exchange) whose messages the
-- server's consumer (lib/inlets) turns into dead letters of `source`. The AMQP URL carries credentials:
-- it is stored encrypted (url_enc, AES-256-GCM under a key derived from the auth secret, like the signing
-- secrets: lib/sources/signing-secret.ts) and shown only as url_display, its password masked.
-- The last columns are the consumer's report (several servers may each write them; the latest wins).
CREATE TABLE "inlets" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid() PRIMARY KEY,
    "source" TEXT NOT NULL REFERENCES "sources" ("name") ON UPDATE CASCADE,
    "url_display" TEXT NOT NULL,
    "url_enc" TEXT NOT NULL,
    "queue" TEXT NOT NULL CHECK (length("queue") BETWEEN 1 AND 255),
    -- Where a message's event id is read: header:<name> | property:message_id | property:correlation_id | json:<path>
    "event_id_from" TEXT NOT NULL DEFAULT 'property:message_id',
    "prefetch" INTEGER NOT NULL DEFAULT 50 CHECK ("prefetch" BETWEEN 1 AND 1000),
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "created_by" TEXT NOT NULL,
    -- starting | consuming | error (last_error says why)
    "state" TEXT NOT NULL DEFAULT 'starting' CHECK ("state" IN ('starting', 'consuming', 'error')),
    "last_error" TEXT,
    "state_at" TIMESTAMPTZ(6),
    -- Messages ready in the queue (checkQueue's messageCount) when last looked at.
    "lag_messages" BIGINT,
    "lag_checked_at" TIMESTAMPTZ(6),
    -- The last message stored: when, and how old it was then (its dead-lettering time to its storage).
    "last_message_at" TIMESTAMPTZ(6),
    "last_message_age_seconds" DOUBLE PRECISION,
    "consumed" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "inlets_one_per_queue" UNIQUE ("source", "url_display", "queue")
);

-- A dead letter that came through an inlet: which inlet, where it was first published (the x-death
-- exchange and routing key, so an AMQP replay can publish it back), and its identity (source +
-- origin_key unique: a message redelivered after a crash between commit and ack is stored once).
-- A message whose event id cannot be read is kept with status 'unidentified' and the reason; it is
-- never selected by a preflight.
ALTER TABLE "dead_letters"
    ADD COLUMN "inlet_id" UUID,
    ADD COLUMN "origin_exchange" TEXT,
    ADD COLUMN "origin_routing_key" TEXT,
    ADD COLUMN "origin_key" TEXT,
    ADD COLUMN "unidentified_reason" TEXT,
    DROP CONSTRAINT "dead_letters_status_check",
    ADD CONSTRAINT "dead_letters_status_check" CHECK ("status" IN ('pending', 'replaying', 'delivered', 'unidentified')),
    ADD CONSTRAINT "dead_letters_unidentified_has_reason" CHECK (("status" = 'unidentified') = ("unidentified_reason" IS NOT NULL));
CREATE UNIQUE INDEX "dead_letters_origin_key_idx" ON "dead_letters" ("source", "origin_key") WHERE "origin_key" IS NOT NULL;

-- A replay destination may be an AMQP URL (amqp:// or amqps://, issue 16 §2). Its credentials are stored
-- encrypted in replay_destination_enc; replay_destination then shows the URL with the password masked.
ALTER TABLE "sources"
    ADD COLUMN "replay_destination_enc" TEXT,
    DROP CONSTRAINT "sources_replay_destination_check",
    ADD CONSTRAINT "sources_replay_destination_check" CHECK ("replay_destination" IS NULL OR "replay_destination" ~ '^(https?|amqps?)://');
