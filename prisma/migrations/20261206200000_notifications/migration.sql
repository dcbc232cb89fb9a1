-- Notifications (lib/notify, issue 27): the conditions the evaluator watches, each with whether it fires and
-- what was announced about it (the throttle's clock), and the messages it sent (kept 30 days).
CREATE TABLE "notification_conditions" (
    "key" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "source" TEXT,
    "summary" TEXT NOT NULL,
    "firing" BOOLEAN NOT NULL,
    "since" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "announced" BOOLEAN NOT NULL DEFAULT false,
    "last_sent_at" TIMESTAMPTZ(6),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),

    CONSTRAINT "notification_conditions_pkey" PRIMARY KEY ("key")
);

CREATE TABLE "notification_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "condition_key" TEXT,
    "kind" TEXT NOT NULL,
    "summary" TEXT NOT NULL,
    "ok" BOOLEAN NOT NULL,
    "status" INTEGER,
    "error" TEXT,
    "actor" TEXT,

    CONSTRAINT "notification_deliveries_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "notification_deliveries_at_idx" ON "notification_deliveries" ("at" DESC);
