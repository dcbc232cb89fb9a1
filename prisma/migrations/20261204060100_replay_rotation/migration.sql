-- Secrets and destinations during a replay (issue 13, points 6 and 7).

-- Rotation without an outage: after a rotation, the previous secret (encrypted like the current one) keeps
-- signing alongside the new one until signing_secret_grace_until (Standard Webhooks' space-separated
-- webhook-signature list), so a receiver can switch at any moment of the grace period.
ALTER TABLE "sources"
    ADD COLUMN "signing_secret_prev_enc" TEXT,
    ADD COLUMN "signing_secret_grace_until" TIMESTAMPTZ(6);

-- Where a running replay sends now: the executor reads the source's destination at each batch and notes
-- it here, so the progress shows it (and a change of destination shows within one batch).
ALTER TABLE "replays"
    ADD COLUMN "destination" TEXT;
