-- Per-replay retry schedule (issue 23 item 3): each replay keeps the schedule it was started with, so a
-- retry hours later still follows it after a restart. The wait after failed attempt n is drawn from
-- [c/2, c) with c = min(retry_initial_ms * 2^(n-1), retry_max_delay_ms) ("equal jitter"); an item fails
-- after retry_max_attempts attempts, or sooner when its next attempt would come after its key expires.
-- Existing replays keep the schedule they ran with (5 attempts, 1 s doubling to 16 s).
ALTER TABLE "replays"
    ADD COLUMN "retry_max_attempts" INTEGER NOT NULL DEFAULT 5 CHECK ("retry_max_attempts" BETWEEN 1 AND 100),
    ADD COLUMN "retry_initial_ms" INTEGER NOT NULL DEFAULT 1000 CHECK ("retry_initial_ms" >= 1),
    ADD COLUMN "retry_max_delay_ms" INTEGER NOT NULL DEFAULT 16000 CHECK ("retry_max_delay_ms" >= "retry_initial_ms");

-- The earliest waiting item of a replay (the executor takes a replay only once one is due; its health
-- and the console show the next attempt time), without reading every item.
CREATE INDEX "replay_items_pending_due_idx" ON "replay_items" ("replay_id", "next_attempt_at") WHERE "outcome" = 'pending';

-- An attempt's headers (issue 23 item 7): what was sent (secrets masked: a signature keeps its first
-- characters) and what the destination answered, each a JSON array of [name, value] pairs in order.
ALTER TABLE "replay_attempts"
    ADD COLUMN "request_headers" JSONB,
    ADD COLUMN "response_headers" JSONB;
