-- Saved results and the payload-hash rule (issue 25; README "The client", docs/architecture.md "Saved results").
--
-- 1. sources.save_results: whether `complete` may keep a result (status, a few headers, body bytes) for the
--    source's keys. Off by default: a source opts in.
-- 2. dedup_keys.result_status/result_headers/result_body: the result the claim's `complete` saved, kept with the
--    key for its lifetime (pruning deletes or drops it with the key, in either mode) and answered to every
--    duplicate claim of it. Only a `done` key holds one (CHECK). Appending columns changes the row type, so, as
--    in 20261204020000_claim_attempt_id: keyward_merge_claim is re-installed, the mode switches rebuild the
--    table with the columns (at the end, where ALTER TABLE puts them, so `INSERT … SELECT *` lines up), and the
--    partition-mode claim functions are re-created: their `ROW(…)::dedup_keys` proposals gain three NULL fields,
--    their answers the result (the scalar version answers the bytes; the batch version only result_status,
--    whether one is saved).
-- 3. A saved result belongs to the claim that saved it: every claim statement keeps it while the claim token is
--    unchanged (a duplicate) and drops it when a new lifetime starts (a reclaim after expiry). It is kept by
--    reference to the stored column (k.result_body), not through the merged row, so a duplicate's update
--    reuses the TOASTed bytes instead of writing them again.
-- 4. The payload-hash rule: a key first claimed without a payload hash keeps the first hash a later claim
--    carries; a different hash after that is a payload_mismatch (before, a later hash was never stored and any
--    two different hashes passed as duplicates).

ALTER TABLE sources ADD COLUMN save_results BOOLEAN NOT NULL DEFAULT false;

ALTER TABLE dedup_keys ADD COLUMN result_status SMALLINT, ADD COLUMN result_headers JSONB, ADD COLUMN result_body BYTEA;
ALTER TABLE dedup_keys ADD CONSTRAINT dedup_keys_result CHECK (
    (result_status IS NULL) = (result_body IS NULL) AND (result_status IS NULL) = (result_headers IS NULL)
    AND (result_status IS NULL OR (status = 'done' AND result_status BETWEEN 200 AND 599)));

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
    -- The first payload hash the key is claimed with is kept, whichever claim carried it.
    cur.payload_hash := coalesce(cur.payload_hash, inc.payload_hash);
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
        result_status SMALLINT,
        result_headers JSONB,
        result_body BYTEA,
        CONSTRAINT dedup_keys_pkey PRIMARY KEY (source, event_id, expires_at),
        CONSTRAINT dedup_keys_status CHECK (status IN ('done', 'processing')),
        CONSTRAINT dedup_keys_lease_iff_processing CHECK ((status = 'processing') = (lease_expires_at IS NOT NULL)),
        CONSTRAINT dedup_keys_claim_kind CHECK (claim_kind IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry')),
        CONSTRAINT dedup_keys_attempt_id CHECK (char_length(attempt_id) BETWEEN 1 AND 128),
        CONSTRAINT dedup_keys_result CHECK ((result_status IS NULL) = (result_body IS NULL) AND (result_status IS NULL) = (result_headers IS NULL)
            AND (result_status IS NULL OR (status = 'done' AND result_status BETWEEN 200 AND 599)))
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
        result_status SMALLINT,
        result_headers JSONB,
        result_body BYTEA,
        CONSTRAINT dedup_keys_pkey PRIMARY KEY (source, event_id),
        CONSTRAINT dedup_keys_status CHECK (status IN ('done', 'processing')),
        CONSTRAINT dedup_keys_lease_iff_processing CHECK ((status = 'processing') = (lease_expires_at IS NOT NULL)),
        CONSTRAINT dedup_keys_claim_kind CHECK (claim_kind IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry')),
        CONSTRAINT dedup_keys_attempt_id CHECK (char_length(attempt_id) BETWEEN 1 AND 128),
        CONSTRAINT dedup_keys_result CHECK ((result_status IS NULL) = (result_body IS NULL) AND (result_status IS NULL) = (result_headers IS NULL)
            AND (result_status IS NULL OR (status = 'done' AND result_status BETWEEN 200 AND 599)))
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

-- The partition-mode claims, as in 20261205051000_partition_claim_reach and 20261205070000_partition_claim_one,
-- with the result columns (see 2 and 3 above). Their answer columns change, hence DROP and CREATE.
DROP FUNCTION keyward_claim_partitioned(text, text[], text[], text[], integer[], integer, text, text[]);

CREATE FUNCTION keyward_claim_partitioned(
    p_source text, p_event_ids text[], p_event_types text[], p_payload_hashes text[], p_repeats integer[],
    p_lease integer, p_actor text, p_attempt_ids text[])
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, is_repeat boolean, claim_token uuid, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer,
               attempt_id text, db_now timestamptz, result_status smallint, result_headers jsonb, result_body bytea)
LANGUAGE plpgsql VOLATILE
-- Planned once per connection (planning a statement over every partition per call cost more than all else:
-- 3-7 ms at 95 partitions). The horizon is a parameter of the cached plan, so the partitions beyond it are
-- pruned when each execution starts: never opened or scanned (PostgreSQL 15 still takes a lock on each).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    ttl integer;
    reach timestamptz;
    horizon timestamptz;
    reach_after timestamptz;
    found_expiries timestamptz[];
    n bigint;
    h integer;
BEGIN
    -- '/' cannot occur in a source name, so source || '/' || event_id names one key. The two-integer form has
    -- a lock space of its own (class 20261203), apart from the bigint job locks.
    FOR h IN SELECT DISTINCT hashtext(p_source || '/' || e) FROM unnest(p_event_ids) e ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(20261203, h);
    END LOOP;
    SELECT s.ttl_seconds, s.keys_reach_until INTO ttl, reach FROM sources s WHERE s.name = p_source;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    horizon := clock_timestamp() + make_interval(secs => greatest(ttl, 86400)) + interval '1 hour';
    IF reach IS NOT NULL AND reach >= horizon THEN
        horizon := reach + interval '1 microsecond';
    END IF;

    -- The probe: which of these keys exist, and where (their expiry names their partition). No row lock:
    -- claims of these keys wait on the advisory locks above, and the rows found are locked below.
    SELECT array_agg(k.expires_at) INTO found_expiries
    FROM dedup_keys k WHERE k.source = p_source AND k.event_id = ANY (p_event_ids) AND k.expires_at < horizon;

    IF found_expiries IS NULL THEN
        -- No key exists yet (the common case): insert them, nothing to lock, merge or update.
        RETURN QUERY
        WITH input AS MATERIALIZED (
            SELECT i.event_id, i.event_type, i.payload_hash, i.repeats, i.attempt_id, gen_random_uuid() AS token
            FROM unnest(p_event_ids, p_event_types, p_payload_hashes, p_repeats, p_attempt_ids)
                 AS i(event_id, event_type, payload_hash, repeats, attempt_id)
        ),
        inserted AS (
            INSERT INTO dedup_keys (source, event_id, event_type, payload_hash, status, claim_token, claim_kind,
                                    lease_expires_at, expires_at, duplicate_count, last_duplicate_at, attempt_id)
            SELECT p_source, i.event_id, i.event_type, i.payload_hash,
                   CASE WHEN p_lease IS NULL THEN 'done' ELSE 'processing' END, i.token, 'claimed',
                   now() + make_interval(secs => p_lease),
                   greatest(now() + make_interval(secs => ttl), now() + make_interval(secs => p_lease)),
                   i.repeats, CASE WHEN i.repeats > 0 THEN now() END, i.attempt_id
            FROM input i
            ORDER BY i.event_id
            RETURNING *
        ),
        audited AS (
            INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
            SELECT j.source, j.event_id, j.event_type, j.claim_kind, p_actor,
                   jsonb_strip_nulls(jsonb_build_object('expiresAt', j.expires_at, 'leaseExpiresAt', j.lease_expires_at,
                                                        'payloadHash', j.payload_hash))
            FROM inserted j
        )
        SELECT j.event_id, j.status, j.claim_kind, true, false, j.claim_token,
               j.payload_hash, j.lease_expires_at, j.received_at, j.expires_at, j.duplicate_count, j.attempt_id, now(),
               NULL::smallint, NULL::jsonb, NULL::bytea
        FROM inserted j;
    ELSE
        -- Lock the rows found, in their own partitions only. One that went since the probe (a release, the
        -- pruner) is missing here, one that moved (an extension) fails to lock: either way the call is
        -- retried whole (40001), so a key that exists is never inserted a second time.
        SELECT count(*) INTO n FROM (
            SELECT 1 FROM dedup_keys k
            WHERE k.source = p_source AND k.event_id = ANY (p_event_ids) AND k.expires_at = ANY (found_expiries)
            FOR UPDATE) locked;
        IF n < cardinality(found_expiries) THEN
            RAISE EXCEPTION 'a key of source % changed during the claim', p_source
                USING ERRCODE = 'serialization_failure', HINT = 'retry the claim';
        END IF;
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
                       i.repeats, CASE WHEN i.repeats > 0 THEN now() END, i.attempt_id,
                       NULL, NULL, NULL)::dedup_keys AS r
            FROM input i
        ),
        merged AS MATERIALIZED (
            SELECT p.event_id, keyward_merge_claim(k, p.r) AS m
            FROM proposed p JOIN dedup_keys k
              ON k.source = p_source AND k.event_id = ANY (p_event_ids) AND k.event_id = p.event_id
                 AND k.expires_at = ANY (found_expiries)
            -- Locks the key's row in whichever partition it is. A row changed in place since this statement's
            -- snapshot (a complete) is re-read in its latest version and merged again; one deleted meanwhile
            -- (the pruner, a release) is skipped, so the key is inserted below; one moved to another partition
            -- meanwhile (an extension) fails with 40001 and the caller retries the whole call (lib/db/sql.ts).
            FOR UPDATE OF k
        ),
        updated AS (
            UPDATE dedup_keys k SET
                (event_type, payload_hash, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at,
                 duplicate_count, last_duplicate_at, attempt_id, result_status, result_headers, result_body) =
                ((m.m).event_type, (m.m).payload_hash, (m.m).status, (m.m).claim_token, (m.m).claim_kind,
                 (m.m).lease_expires_at, (m.m).received_at, (m.m).expires_at, (m.m).duplicate_count, (m.m).last_duplicate_at,
                 (m.m).attempt_id,
                 -- a saved result stays with the claim that saved it (by reference: its bytes are not rewritten)
                 CASE WHEN (m.m).claim_token = k.claim_token THEN k.result_status END,
                 CASE WHEN (m.m).claim_token = k.claim_token THEN k.result_headers END,
                 CASE WHEN (m.m).claim_token = k.claim_token THEN k.result_body END)
            FROM merged m
            WHERE k.source = p_source AND k.event_id = ANY (p_event_ids) AND k.event_id = m.event_id
              AND k.expires_at = ANY (found_expiries)
            RETURNING k.source, k.event_id, k.event_type, k.status, k.claim_token, k.claim_kind, k.payload_hash,
                      k.lease_expires_at, k.received_at, k.expires_at, k.duplicate_count, k.attempt_id, k.result_status
        ),
        inserted AS (
            INSERT INTO dedup_keys
            SELECT (p.r).* FROM proposed p
            WHERE NOT EXISTS (SELECT 1 FROM merged m WHERE m.event_id = p.event_id)
            ORDER BY p.event_id
            RETURNING source, event_id, event_type, status, claim_token, claim_kind, payload_hash,
                      lease_expires_at, received_at, expires_at, duplicate_count, attempt_id, result_status
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
        -- A batch answers whether a result is saved, not the result itself (lib/claims/claim.ts).
        SELECT j.event_id, j.status, j.claim_kind, j.claimed_now, j.is_repeat,
               CASE WHEN j.claimed_now OR j.is_repeat THEN j.claim_token END,
               j.payload_hash, j.lease_expires_at, j.received_at, j.expires_at, j.duplicate_count, j.attempt_id, now(),
               j.result_status, NULL::jsonb, NULL::bytea
        FROM joined j;
    END IF;

    SELECT s.keys_reach_until INTO reach_after FROM sources s WHERE s.name = p_source;
    IF reach_after IS NOT NULL AND reach_after >= horizon THEN
        RAISE EXCEPTION 'the reach of source % widened during the claim', p_source
            USING ERRCODE = 'serialization_failure', HINT = 'retry the claim';
    END IF;
END $$;

DROP FUNCTION keyward_claim_partitioned_one(text, text, text, text, integer, integer, text, text);

CREATE FUNCTION keyward_claim_partitioned_one(
    p_source text, p_event_id text, p_event_type text, p_payload_hash text, p_repeats integer,
    p_lease integer, p_actor text, p_attempt_id text)
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, is_repeat boolean, claim_token uuid, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer,
               attempt_id text, db_now timestamptz, result_status smallint, result_headers jsonb, result_body bytea)
LANGUAGE plpgsql VOLATILE
-- Planned once per connection, the horizon a parameter of the cached plan: see keyward_claim_partitioned.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    ttl integer;
    reach timestamptz;
    horizon timestamptz;
    reach_after timestamptz;
    found_expiry timestamptz;
    stored_type text;
    token uuid := gen_random_uuid();
BEGIN
    PERFORM pg_advisory_xact_lock(20261203, hashtext(p_source || '/' || p_event_id));
    SELECT s.ttl_seconds, s.keys_reach_until INTO ttl, reach FROM sources s WHERE s.name = p_source;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    horizon := clock_timestamp() + make_interval(secs => greatest(ttl, 86400)) + interval '1 hour';
    IF reach IS NOT NULL AND reach >= horizon THEN
        horizon := reach + interval '1 microsecond';
    END IF;

    -- The probe. No row lock: claims of this key wait on the advisory lock above.
    SELECT k.expires_at INTO found_expiry
    FROM dedup_keys k WHERE k.source = p_source AND k.event_id = p_event_id AND k.expires_at < horizon
    LIMIT 1;

    IF NOT FOUND THEN
        -- A first claim (the common case): nothing to lock, merge or update.
        INSERT INTO dedup_keys AS k (source, event_id, event_type, payload_hash, status, claim_token, claim_kind,
                                     lease_expires_at, expires_at, duplicate_count, last_duplicate_at, attempt_id)
        VALUES (p_source, p_event_id, p_event_type, p_payload_hash,
                CASE WHEN p_lease IS NULL THEN 'done' ELSE 'processing' END, token, 'claimed',
                now() + make_interval(secs => p_lease),
                -- a key never expires while its lease runs (greatest() ignores a NULL lease)
                greatest(now() + make_interval(secs => ttl), now() + make_interval(secs => p_lease)),
                p_repeats, CASE WHEN p_repeats > 0 THEN now() END, p_attempt_id)
        RETURNING k.event_type, k.event_id, k.status, k.claim_kind, k.claim_token, k.payload_hash, k.lease_expires_at,
                  k.received_at, k.expires_at, k.duplicate_count, k.attempt_id
        INTO stored_type, event_id, status, claim_kind, claim_token, payload_hash, lease_expires_at,
             received_at, expires_at, duplicate_count, attempt_id;
        claimed_now := true;
        is_repeat := false;
    ELSE
        -- Lock, merge and write the row found, in its own partition only. A row changed in place since the
        -- probe (a complete) is re-read in its newest version and merged again if its expiry is unchanged;
        -- one that went or moved is not updated (no row, or PostgreSQL's own 40001): retried whole.
        UPDATE dedup_keys k SET
            (event_type, payload_hash, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at,
             duplicate_count, last_duplicate_at, attempt_id, result_status, result_headers, result_body) =
            (SELECT m.event_type, m.payload_hash, m.status, m.claim_token, m.claim_kind, m.lease_expires_at,
                    m.received_at, m.expires_at, m.duplicate_count, m.last_duplicate_at, m.attempt_id,
                    -- a saved result stays with the claim that saved it (by reference: its bytes are not rewritten)
                    CASE WHEN m.claim_token = k.claim_token THEN k.result_status END,
                    CASE WHEN m.claim_token = k.claim_token THEN k.result_headers END,
                    CASE WHEN m.claim_token = k.claim_token THEN k.result_body END
             FROM keyward_merge_claim(k, ROW(p_source, p_event_id, p_event_type, p_payload_hash,
                      CASE WHEN p_lease IS NULL THEN 'done' ELSE 'processing' END, token, 'claimed',
                      now() + make_interval(secs => p_lease), now(),
                      greatest(now() + make_interval(secs => ttl), now() + make_interval(secs => p_lease)),
                      p_repeats, CASE WHEN p_repeats > 0 THEN now() END, p_attempt_id, NULL, NULL, NULL)::dedup_keys) m)
        WHERE k.source = p_source AND k.event_id = p_event_id AND k.expires_at = found_expiry
        RETURNING k.event_type, k.event_id, k.status, k.claim_kind, k.claim_token, k.payload_hash, k.lease_expires_at,
                  k.received_at, k.expires_at, k.duplicate_count, k.attempt_id, k.result_status, k.result_headers, k.result_body
        INTO stored_type, event_id, status, claim_kind, claim_token, payload_hash, lease_expires_at,
             received_at, expires_at, duplicate_count, attempt_id, result_status, result_headers, result_body;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'a key of source % changed during the claim', p_source
                USING ERRCODE = 'serialization_failure', HINT = 'retry the claim';
        END IF;
        claimed_now := claim_token = token;
        -- the same attempt again (keyward_merge_claim left the key as that attempt made it)
        is_repeat := NOT claimed_now AND p_attempt_id IS NOT NULL AND attempt_id IS NOT DISTINCT FROM p_attempt_id
            AND NOT (payload_hash IS NOT NULL AND p_payload_hash IS NOT NULL AND payload_hash <> p_payload_hash);
        IF NOT (claimed_now OR is_repeat) THEN
            claim_token := NULL;
        END IF;
    END IF;

    IF claimed_now THEN
        INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
        VALUES (p_source, p_event_id, stored_type, claim_kind, p_actor,
                jsonb_strip_nulls(jsonb_build_object('expiresAt', expires_at, 'leaseExpiresAt', lease_expires_at,
                                                     'payloadHash', payload_hash)));
    END IF;

    SELECT s.keys_reach_until INTO reach_after FROM sources s WHERE s.name = p_source;
    IF reach_after IS NOT NULL AND reach_after >= horizon THEN
        RAISE EXCEPTION 'the reach of source % widened during the claim', p_source
            USING ERRCODE = 'serialization_failure', HINT = 'retry the claim';
    END IF;
    db_now := now();
    RETURN NEXT;
END $$;
