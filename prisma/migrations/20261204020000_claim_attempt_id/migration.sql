-- Claim attempts (issue 11, "ambiguous claims"): a claim may carry a client-chosen attempt id, stored with
-- the key. A claim whose answer was lost (a timeout, a dropped connection) may have committed; its retry
-- with the same attempt id gets the original `claimed` answer back (marked as a repeat, with the same
-- claim token), while any other caller still gets `duplicate`. README "Claim", docs/reliability.md.
--
-- The new column is appended to dedup_keys, so the row type changes: keyward_merge_claim is re-created
-- (through keyward_install_merge_claim, which partition enable/disable call too), the two functions that
-- rebuild the table for a mode switch gain the column (at the end, where ALTER TABLE puts it, so their
-- `INSERT … SELECT *` copies line up), and keyward_claim_partitioned takes the attempt ids and answers
-- whether each row is a repeat. Works in either mode: ALTER TABLE on a partitioned table reaches every
-- partition.

ALTER TABLE dedup_keys ADD COLUMN attempt_id TEXT;
ALTER TABLE dedup_keys ADD CONSTRAINT dedup_keys_attempt_id CHECK (char_length(attempt_id) BETWEEN 1 AND 128);

CREATE OR REPLACE FUNCTION keyward_install_merge_claim() RETURNS void
LANGUAGE plpgsql AS $install$
BEGIN
    EXECUTE $def$
CREATE OR REPLACE FUNCTION keyward_merge_claim(cur dedup_keys, inc dedup_keys) RETURNS dedup_keys
LANGUAGE plpgsql AS $$
BEGIN
    IF cur.expires_at <= now() THEN
        inc.claim_kind := 'reclaimed_after_expiry';
        RETURN inc;
    END IF;
    IF cur.payload_hash IS NOT NULL AND inc.payload_hash IS NOT NULL AND cur.payload_hash <> inc.payload_hash THEN
        RETURN cur;
    END IF;
    -- The same attempt again (its answer was lost): the key as that attempt left it, nothing counted. A
    -- lapsed lease is not handed back (someone else may take it over): the attempt takes it over anew below.
    IF inc.attempt_id IS NOT NULL AND cur.attempt_id = inc.attempt_id
       AND NOT (cur.status = 'processing' AND cur.lease_expires_at <= now()) THEN
        RETURN cur;
    END IF;
    IF cur.status = 'processing' THEN
        IF cur.lease_expires_at <= now() THEN
            cur.claim_token := inc.claim_token;
            cur.attempt_id := inc.attempt_id;
            cur.claim_kind := 'lease_takeover';
            cur.status := inc.status;
            cur.lease_expires_at := inc.lease_expires_at;
            -- a key never expires while its lease runs
            cur.expires_at := greatest(cur.expires_at, inc.lease_expires_at);
            cur.payload_hash := coalesce(cur.payload_hash, inc.payload_hash);
            IF inc.duplicate_count > 0 THEN
                cur.duplicate_count := cur.duplicate_count + inc.duplicate_count;
                cur.last_duplicate_at := now();
            END IF;
        END IF;
        RETURN cur;
    END IF;
    cur.duplicate_count := cur.duplicate_count + 1 + inc.duplicate_count;
    cur.last_duplicate_at := now();
    RETURN cur;
END $$
$def$;
END $install$;

SELECT keyward_install_merge_claim();

CREATE OR REPLACE FUNCTION keyward_partitions_enable(days_ahead integer DEFAULT 3)
RETURNS TABLE (partitions_created integer, rows_moved bigint)
LANGUAGE plpgsql AS $$
DECLARE
    today date := (now() AT TIME ZONE 'UTC')::date;
    first_day date;
    created integer := 0;
    moved bigint;
BEGIN
    LOCK TABLE dedup_keys IN ACCESS EXCLUSIVE MODE;
    IF (SELECT relkind FROM pg_class WHERE oid = 'dedup_keys'::regclass) = 'p' THEN
        RAISE EXCEPTION 'dedup_keys is already in partition mode' USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT (min(expires_at) AT TIME ZONE 'UTC')::date INTO first_day FROM dedup_keys;

    ALTER TABLE dedup_keys RENAME TO dedup_keys_single;
    ALTER INDEX dedup_keys_pkey RENAME TO dedup_keys_single_pkey;
    ALTER INDEX dedup_keys_expires_at_idx RENAME TO dedup_keys_single_expires_at_idx;
    ALTER INDEX dedup_keys_in_flight_idx RENAME TO dedup_keys_single_in_flight_idx;

    -- The primary key's (source, event_id) prefix serves every lookup by key, so no second index.
    CREATE TABLE dedup_keys (
        source TEXT NOT NULL,
        event_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        payload_hash TEXT,
        status TEXT NOT NULL,
        claim_token UUID NOT NULL,
        claim_kind TEXT NOT NULL,
        lease_expires_at TIMESTAMPTZ(6),
        received_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
        expires_at TIMESTAMPTZ(6) NOT NULL,
        duplicate_count INTEGER NOT NULL DEFAULT 0,
        last_duplicate_at TIMESTAMPTZ(6),
        attempt_id TEXT,
        CONSTRAINT dedup_keys_pkey PRIMARY KEY (source, event_id, expires_at),
        CONSTRAINT dedup_keys_status CHECK (status IN ('done', 'processing')),
        CONSTRAINT dedup_keys_lease_iff_processing CHECK ((status = 'processing') = (lease_expires_at IS NOT NULL)),
        CONSTRAINT dedup_keys_claim_kind CHECK (claim_kind IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry')),
        CONSTRAINT dedup_keys_attempt_id CHECK (char_length(attempt_id) BETWEEN 1 AND 128)
    ) PARTITION BY RANGE (expires_at);
    CREATE INDEX dedup_keys_expires_at_idx ON dedup_keys (expires_at);
    CREATE INDEX dedup_keys_in_flight_idx ON dedup_keys (lease_expires_at) WHERE status = 'processing';

    IF first_day < today THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF dedup_keys FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 90)',
            'dedup_keys_pre' || to_char(today, 'YYYYMMDD'),
            first_day::timestamp AT TIME ZONE 'UTC', today::timestamp AT TIME ZONE 'UTC');
        created := created + 1;
    END IF;
    FOR i IN 0..(keyward_dedup_days_needed() + days_ahead) LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF dedup_keys FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 90)',
            keyward_dedup_partition_name(today + i),
            (today + i)::timestamp AT TIME ZONE 'UTC', (today + i + 1)::timestamp AT TIME ZONE 'UTC');
        created := created + 1;
    END LOOP;
    CREATE TABLE dedup_keys_default PARTITION OF dedup_keys DEFAULT WITH (fillfactor = 90);

    INSERT INTO dedup_keys SELECT * FROM dedup_keys_single;
    GET DIAGNOSTICS moved = ROW_COUNT;

    DROP FUNCTION keyward_merge_claim(dedup_keys_single, dedup_keys_single);
    DROP TABLE dedup_keys_single;
    PERFORM keyward_install_merge_claim();
    RETURN QUERY SELECT created, moved;
END $$;

CREATE OR REPLACE FUNCTION keyward_partitions_disable()
RETURNS TABLE (partitions_dropped integer, rows_moved bigint)
LANGUAGE plpgsql AS $$
DECLARE
    parts integer;
    moved bigint;
BEGIN
    LOCK TABLE dedup_keys IN ACCESS EXCLUSIVE MODE;
    IF (SELECT relkind FROM pg_class WHERE oid = 'dedup_keys'::regclass) <> 'p' THEN
        RAISE EXCEPTION 'dedup_keys is not in partition mode' USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT count(*) INTO parts FROM keyward_dedup_partitions();

    ALTER TABLE dedup_keys RENAME TO dedup_keys_partitioned;
    ALTER INDEX dedup_keys_pkey RENAME TO dedup_keys_partitioned_pkey;
    ALTER INDEX dedup_keys_expires_at_idx RENAME TO dedup_keys_partitioned_expires_at_idx;
    ALTER INDEX dedup_keys_in_flight_idx RENAME TO dedup_keys_partitioned_in_flight_idx;

    CREATE TABLE dedup_keys (
        source TEXT NOT NULL,
        event_id TEXT NOT NULL,
        event_type TEXT NOT NULL,
        payload_hash TEXT,
        status TEXT NOT NULL,
        claim_token UUID NOT NULL,
        claim_kind TEXT NOT NULL,
        lease_expires_at TIMESTAMPTZ(6),
        received_at TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
        expires_at TIMESTAMPTZ(6) NOT NULL,
        duplicate_count INTEGER NOT NULL DEFAULT 0,
        last_duplicate_at TIMESTAMPTZ(6),
        attempt_id TEXT,
        CONSTRAINT dedup_keys_pkey PRIMARY KEY (source, event_id),
        CONSTRAINT dedup_keys_status CHECK (status IN ('done', 'processing')),
        CONSTRAINT dedup_keys_lease_iff_processing CHECK ((status = 'processing') = (lease_expires_at IS NOT NULL)),
        CONSTRAINT dedup_keys_claim_kind CHECK (claim_kind IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry')),
        CONSTRAINT dedup_keys_attempt_id CHECK (char_length(attempt_id) BETWEEN 1 AND 128)
    ) WITH (fillfactor = 90);
    CREATE INDEX dedup_keys_expires_at_idx ON dedup_keys (expires_at);
    CREATE INDEX dedup_keys_in_flight_idx ON dedup_keys (lease_expires_at) WHERE status = 'processing';

    INSERT INTO dedup_keys SELECT * FROM dedup_keys_partitioned;
    GET DIAGNOSTICS moved = ROW_COUNT;

    DROP FUNCTION keyward_merge_claim(dedup_keys_partitioned, dedup_keys_partitioned);
    DROP TABLE dedup_keys_partitioned;
    PERFORM keyward_install_merge_claim();
    RETURN QUERY SELECT parts, moved;
END $$;

DROP FUNCTION keyward_claim_partitioned(text, text[], text[], text[], integer[], integer, text);

CREATE FUNCTION keyward_claim_partitioned(
    p_source text, p_event_ids text[], p_event_types text[], p_payload_hashes text[], p_repeats integer[],
    p_lease integer, p_actor text, p_attempt_ids text[])
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, is_repeat boolean, claim_token uuid, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer)
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
           j.payload_hash, j.lease_expires_at, j.received_at, j.expires_at, j.duplicate_count
    FROM joined j;
END $$;
