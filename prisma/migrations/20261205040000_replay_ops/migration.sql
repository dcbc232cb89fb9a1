-- Replay operations (issue 13, points 8, 10 and 12): replay health, per-attempt evidence, and dead letters
-- an operator discards or marks resolved.

-- Health (§8). running_since: when the replay last started running (created, or resumed), so a paused
-- time never counts as a stall. last_settled_at: the last result recorded for any of its items (a retry
-- included). consecutive_failures: failed attempts since the last delivery (or resume). last_error /
-- last_error_at: the latest failed attempt's error, or why the worker paused it.
ALTER TABLE "replays"
    ADD COLUMN "running_since" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    ADD COLUMN "last_settled_at" TIMESTAMPTZ(6),
    ADD COLUMN "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN "last_error" TEXT,
    ADD COLUMN "last_error_at" TIMESTAMPTZ(6);

-- Evidence (§10): every replay attempt of a dead letter, kept with the letter (deleted with it when
-- retention prunes it). response_body: the first 2 KiB of the answer as text (UTF-8, invalid bytes as
-- U+FFFD). outcome: what the attempt led to (delivered, retry, failed, cancelled).
CREATE TABLE "replay_attempts" (
    "id" BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    "replay_id" UUID NOT NULL,
    "dead_letter_id" UUID NOT NULL REFERENCES "dead_letters" ("id") ON DELETE CASCADE,
    "attempt" INTEGER NOT NULL CHECK ("attempt" >= 1),
    "at" TIMESTAMPTZ(6) NOT NULL,
    "destination" TEXT NOT NULL,
    "status" INTEGER,
    "latency_ms" INTEGER NOT NULL CHECK ("latency_ms" >= 0),
    "response_body" TEXT,
    "error" TEXT,
    "outcome" TEXT NOT NULL CHECK ("outcome" IN ('delivered', 'retry', 'failed', 'cancelled'))
);
-- A letter's attempts, newest first (keyset on (at, id)).
CREATE INDEX "replay_attempts_dead_letter_idx" ON "replay_attempts" ("dead_letter_id", "at" DESC, "id" DESC);

-- Retry failed (§9): the finished replay whose failed items a preflight retries.
ALTER TABLE "replay_preflights" ADD COLUMN "retry_of" UUID REFERENCES "replays" ("id");

-- The last replay status of a letter, from the same attempt as last_replay_error (§10).
ALTER TABLE "dead_letters" ADD COLUMN "last_replay_status" INTEGER;

-- Clean-up (§12): an operator discards a pending letter (with a reason) or marks it resolved (handled
-- outside Keyward). Both settle it: never replayed, not counted at risk, pruned after the retention like
-- a delivered one. settled_by / settle_reason: who did it and why. ('unidentified', an inlet message
-- without a usable event id, stays as 20261205030000_amqp_inlets made it: never replayed, not settled.)
ALTER TABLE "dead_letters"
    ADD COLUMN "settled_by" TEXT,
    ADD COLUMN "settle_reason" TEXT,
    DROP CONSTRAINT IF EXISTS "dead_letters_status_check",
    DROP CONSTRAINT IF EXISTS "dead_letters_settled_iff_delivered",
    ADD CONSTRAINT "dead_letters_status_check" CHECK ("status" IN ('pending', 'replaying', 'delivered', 'unidentified', 'discarded', 'resolved')),
    ADD CONSTRAINT "dead_letters_settled_iff_settled_status"
        CHECK (("status" IN ('delivered', 'discarded', 'resolved')) = ("settled_at" IS NOT NULL));
DROP INDEX IF EXISTS "dead_letters_settled_idx";
CREATE INDEX "dead_letters_settled_idx" ON "dead_letters" ("settled_at") WHERE "status" IN ('delivered', 'discarded', 'resolved');
