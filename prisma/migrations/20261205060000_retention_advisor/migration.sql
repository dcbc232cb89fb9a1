-- Retention tuning from evidence (issue 14; docs/retention-advisor.md).
--
-- duplicate_ages: per source and minute, how old each key was when a duplicate of it arrived (database
-- now() − the key's received_at, the first claim of the key as it stands), counted into fixed log
-- buckets: ≤1 s, 10 s, 1 min, 10 min, 1 h, 6 h, 1 d, 2 d, 3 d, 5 d, 7 d, 14 d, 30 d, 90 d, and > 90 d
-- (15 counts, lib/metrics/duplicate-ages.ts), plus the largest age seen. Filled by the claim-outcome
-- flush (lib/metrics/claim-counts.ts), never by the claim itself; kept 90 days.
--
-- late_duplicates: first claims of an event whose earlier claim is in the audit history (its key expired
-- and was claimed again: processed twice), found by a bounded job over recent audit rows
-- (lib/retention/late-duplicates.ts); kept 90 days. late_duplicate_cursors holds the job's position: the
-- last audit row (at, id) it has read.
--
-- A duplicate's age comes from what both claim statements already answer (db_now − received_at, both by
-- the database clock: lib/claims/claim.ts); no claim statement changes here.

CREATE TABLE duplicate_ages (
    bucket TIMESTAMPTZ(6) NOT NULL,
    source TEXT NOT NULL,
    counts INTEGER[] NOT NULL,
    max_age_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
    CONSTRAINT duplicate_ages_pkey PRIMARY KEY (source, bucket),
    CONSTRAINT duplicate_ages_counts CHECK (array_length(counts, 1) = 15 AND array_ndims(counts) = 1)
);
-- retention deletes by time across sources
CREATE INDEX duplicate_ages_bucket_idx ON duplicate_ages (bucket);

CREATE TABLE late_duplicates (
    source TEXT NOT NULL,
    event_id TEXT NOT NULL,
    event_type TEXT,
    first_claim_at TIMESTAMPTZ(6) NOT NULL,
    late_claim_at TIMESTAMPTZ(6) NOT NULL,
    gap_seconds DOUBLE PRECISION NOT NULL,
    -- unpruned: the expired key was still stored (claim kind reclaimed_after_expiry); pruned: it was gone
    key_state TEXT NOT NULL,
    -- the late claim was made while a Keyward replay re-drove the event
    via_replay BOOLEAN NOT NULL DEFAULT false,
    late_actor TEXT,
    detected_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT late_duplicates_pkey PRIMARY KEY (source, event_id, late_claim_at),
    CONSTRAINT late_duplicates_key_state CHECK (key_state IN ('pruned', 'unpruned'))
);
CREATE INDEX late_duplicates_source_late_idx ON late_duplicates (source, late_claim_at DESC, event_id DESC);
CREATE INDEX late_duplicates_late_idx ON late_duplicates (late_claim_at);

CREATE TABLE late_duplicate_cursors (
    name TEXT NOT NULL,
    at TIMESTAMPTZ(6) NOT NULL,
    id BIGINT NOT NULL,
    updated_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT late_duplicate_cursors_pkey PRIMARY KEY (name)
);
