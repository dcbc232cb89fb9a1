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
-- keyward_claim_partitioned answers one more column, age_seconds, like CLAIM_SQL (lib/claims/claim.ts).

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

DROP FUNCTION keyward_claim_partitioned(text, text[], text[], text[], integer[], integer, text, text[]);

CREATE FUNCTION keyward_claim_partitioned(
    p_source text, p_event_ids text[], p_event_types text[], p_payload_hashes text[], p_repeats integer[],
    p_lease integer, p_actor text, p_attempt_ids text[])
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, is_repeat boolean, claim_token uuid, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer,
               age_seconds double precision)
LANGUAGE plpgsql VOLATILE
-- No statement here can prune partitions by its parameters (the key says nothing about its expiry day), so
-- a custom plan is never better; planning an UPDATE over every partition is the costly part, done once
-- per connection instead of on each of its first five calls.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    ttl integer;
    h integer;
BEGIN
    SELECT s.ttl_seconds INTO ttl FROM sources s WHERE s.name = p_source;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- The two-integer form has a lock space of its own (class 20261203), apart from the bigint job locks.
    -- '/' cannot occur in a source name, so source || '/' || event_id names one key.
    FOR h IN SELECT DISTINCT hashtext(p_source || '/' || e) FROM unnest(p_event_ids) e ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(20261203, h);
    END LOOP;

    RETURN QUERY
    WITH input AS MATERIALIZED (
        SELECT i.event_id, i.event_type, i.payload_hash, i.repeats, i.attempt_id, gen_random_uuid() AS token
        FROM unnest(p_event_ids, p_event_types, p_payload_hashes, p_repeats, p_attempt_ids)
             AS i(event_id, event_type, payload_hash, repeats, attempt_id)
    ),
    proposed AS MATERIALIZED (
        SELECT i.event_id, i.token, i.attempt_id,
               ROW(p_source, i.event_id, i.event_type, i.payload_hash,
                   CASE WHEN p_lease IS NULL THEN 'done' ELSE 'processing' END, i.token, 'claimed',
                   now() + make_interval(secs => p_lease), now(),
                   -- a key never expires while its lease runs (greatest() ignores a NULL lease)
                   greatest(now() + make_interval(secs => ttl), now() + make_interval(secs => p_lease)),
                   i.repeats, CASE WHEN i.repeats > 0 THEN now() END, i.attempt_id)::dedup_keys AS r
        FROM input i
    ),
    merged AS MATERIALIZED (
        SELECT p.event_id, keyward_merge_claim(k, p.r) AS m
        -- "= ANY" spelled out: the plan is generic, and a join qual alone lets it scan the source's keys
        FROM proposed p JOIN dedup_keys k
          ON k.source = p_source AND k.event_id = ANY (p_event_ids) AND k.event_id = p.event_id
        -- Locks the key's row in whichever partition it is. A row changed in place since this statement's
        -- snapshot (a complete) is re-read in its latest version and merged again; one deleted meanwhile
        -- (the pruner, a release) is skipped, so the key is inserted below; one moved to another partition
        -- meanwhile (extend) fails with 40001 and the caller retries the whole call (lib/db/sql.ts).
        FOR UPDATE OF k
    ),
    updated AS (
        UPDATE dedup_keys k SET
            (event_type, payload_hash, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at,
             duplicate_count, last_duplicate_at, attempt_id) =
            ((m.m).event_type, (m.m).payload_hash, (m.m).status, (m.m).claim_token, (m.m).claim_kind,
             (m.m).lease_expires_at, (m.m).received_at, (m.m).expires_at, (m.m).duplicate_count, (m.m).last_duplicate_at,
             (m.m).attempt_id)
        FROM merged m
        WHERE k.source = p_source AND k.event_id = ANY (p_event_ids) AND k.event_id = m.event_id
        RETURNING k.*
    ),
    inserted AS (
        INSERT INTO dedup_keys
        SELECT (p.r).* FROM proposed p
        WHERE NOT EXISTS (SELECT 1 FROM merged m WHERE m.event_id = p.event_id)
        ORDER BY p.event_id
        RETURNING *
    ),
    joined AS (
        SELECT s.*, s.claim_token = p.token AS claimed_now,
               s.claim_token <> p.token AND p.attempt_id IS NOT NULL AND s.attempt_id = p.attempt_id
                 AND NOT (s.payload_hash IS NOT NULL AND (p.r).payload_hash IS NOT NULL AND s.payload_hash <> (p.r).payload_hash)
                 AS is_repeat
        FROM (SELECT * FROM updated UNION ALL SELECT * FROM inserted) s JOIN proposed p ON p.event_id = s.event_id
    ),
    audited AS (
        INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
        SELECT j.source, j.event_id, j.event_type, j.claim_kind, p_actor,
               jsonb_strip_nulls(jsonb_build_object('expiresAt', j.expires_at, 'leaseExpiresAt', j.lease_expires_at,
                                                    'payloadHash', j.payload_hash))
        FROM joined j WHERE j.claimed_now
    )
    SELECT j.event_id, j.status, j.claim_kind, j.claimed_now, j.is_repeat,
           CASE WHEN j.claimed_now OR j.is_repeat THEN j.claim_token END,
           j.payload_hash, j.lease_expires_at, j.received_at, j.expires_at, j.duplicate_count,
           -- the key's age on the database clock: a duplicate's age since its key was first claimed (issue 14)
           extract(epoch FROM now() - j.received_at)::float8
    FROM joined j;
END $$;
