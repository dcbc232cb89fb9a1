-- Partition mode's claim plans no longer depend on the partitions' statistics (issue 27).
--
-- Both claim functions run a generic plan made once per connection (plan_cache_mode = force_generic_plan,
-- 20261205051000_partition_claim_reach). A plan made while a partition was empty (never analysed, or analysed
-- while empty) kept choosing, once that partition had filled, what suits an empty table: a sequential scan of
-- it, or for the batch function's `event_id = ANY (…)` an index scan on the source alone with the ids as a
-- filter, or a bitmap of every key of the source in it. Each probe then read the whole partition until
-- autovacuum analysed it and the plans were remade: batches ran at 0.12-0.20x in their first cycles (the
-- partition bench), a batch probe of 300,000 keys took ~1 s (test/partitions/plans.test.ts). ANALYZE when a
-- partition is created cannot help: it is created empty, days ahead, and an empty partition analysed plans
-- the sequential scan outright. So the plans are made so that the partition's size cannot matter:
--
-- * enable_seqscan = off for both functions: a scan of dedup_keys is an index scan.
-- * The batch function reads dedup_keys one key at a time: `unnest(ids) CROSS JOIN LATERAL (… WHERE source =
--   … AND event_id = e.id … OFFSET 0)` is a nested loop whose inner side is an equality lookup on the primary
--   key (OFFSET 0 keeps the subquery from being flattened into a join that could scan); the UPDATE joins on
--   every column of the key.
--
-- The answers are unchanged; only how the rows are found.

-- The write of one key found by keyward_claim_partitioned (already locked by it): the merged values, and the
-- saved result kept while the claim token is unchanged (by reference: its bytes are not rewritten). Its WHERE
-- names the whole key (source, event id, the stored expiry), so whatever the statistics its plan is a lookup.
CREATE FUNCTION keyward_claim_partitioned_write(
    p_source text, p_event_id text, p_stored_expiry timestamptz,
    m_event_type text, m_payload_hash text, m_status text, m_claim_token uuid, m_claim_kind text,
    m_lease_expires_at timestamptz, m_received_at timestamptz, m_expires_at timestamptz, m_duplicate_count integer,
    m_last_duplicate_at timestamptz, m_attempt_id text)
RETURNS TABLE (source text, event_id text, event_type text, status text, claim_token uuid, claim_kind text, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer,
               attempt_id text, result_status smallint)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    UPDATE dedup_keys k SET
        (event_type, payload_hash, status, claim_token, claim_kind, lease_expires_at, received_at, expires_at,
         duplicate_count, last_duplicate_at, attempt_id, result_status, result_headers, result_body) =
        (m_event_type, m_payload_hash, m_status, m_claim_token, m_claim_kind, m_lease_expires_at, m_received_at, m_expires_at,
         m_duplicate_count, m_last_duplicate_at, m_attempt_id,
         CASE WHEN m_claim_token = k.claim_token THEN k.result_status END,
         CASE WHEN m_claim_token = k.claim_token THEN k.result_headers END,
         CASE WHEN m_claim_token = k.claim_token THEN k.result_body END)
    WHERE k.source = p_source AND k.event_id = p_event_id AND k.expires_at = p_stored_expiry
    RETURNING k.source, k.event_id, k.event_type, k.status, k.claim_token, k.claim_kind, k.payload_hash,
              k.lease_expires_at, k.received_at, k.expires_at, k.duplicate_count, k.attempt_id, k.result_status;
END $$;

CREATE OR REPLACE FUNCTION keyward_claim_partitioned(
    p_source text, p_event_ids text[], p_event_types text[], p_payload_hashes text[], p_repeats integer[],
    p_lease integer, p_actor text, p_attempt_ids text[])
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, is_repeat boolean, claim_token uuid, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer,
               attempt_id text, db_now timestamptz, result_status smallint, result_headers jsonb, result_body bytea)
LANGUAGE plpgsql VOLATILE
-- Planned once per connection (planning a statement over every partition per call cost more than all else:
-- 3-7 ms at 95 partitions). The horizon is a parameter of the cached plan, so the partitions beyond it are
-- pruned when each execution starts: never opened or scanned (PostgreSQL 15 still takes a lock on each).
-- The cached plan outlives the sizes it was made for (see the header): no sequential scans, and every read
-- of dedup_keys is a per-key lookup.
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
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
    -- One equality lookup per id (LATERAL … OFFSET 0 is a nested loop over the ids, never a join that scans).
    SELECT array_agg(f.expires_at) INTO found_expiries
    FROM unnest(p_event_ids) AS e(id)
    CROSS JOIN LATERAL (
        SELECT k.expires_at FROM dedup_keys k
        WHERE k.source = p_source AND k.event_id = e.id AND k.expires_at < horizon
        OFFSET 0) f;

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
        SELECT count(*) INTO n
        FROM unnest(p_event_ids) AS e(id)
        CROSS JOIN LATERAL (
            SELECT 1 FROM dedup_keys k
            WHERE k.source = p_source AND k.event_id = e.id AND k.expires_at = ANY (found_expiries)
            OFFSET 0 FOR UPDATE) locked;
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
            SELECT p.event_id, l.stored_expiry, keyward_merge_claim(l.k, p.r) AS m
            FROM proposed p
            CROSS JOIN LATERAL (
                SELECT k, k.expires_at AS stored_expiry FROM dedup_keys k
                WHERE k.source = p_source AND k.event_id = p.event_id AND k.expires_at = ANY (found_expiries)
                -- Locks the key's row in whichever partition it is. A row changed in place since this statement's
                -- snapshot (a complete) is re-read in its latest version and merged again; one deleted meanwhile
                -- (the pruner, a release) is skipped, so the key is inserted below; one moved to another partition
                -- meanwhile (an extension) fails with 40001 and the caller retries the whole call (lib/db/sql.ts).
                OFFSET 0 FOR UPDATE) l
        ),
        -- Each key found is written by a statement of its own whose WHERE names every column of the key: a join
        -- of the merged rows with dedup_keys could be planned as a scan of every key of the source.
        updated AS MATERIALIZED (
            SELECT u.* FROM merged m
            CROSS JOIN LATERAL keyward_claim_partitioned_write(p_source, m.event_id, m.stored_expiry,
                (m.m).event_type, (m.m).payload_hash, (m.m).status, (m.m).claim_token, (m.m).claim_kind,
                (m.m).lease_expires_at, (m.m).received_at, (m.m).expires_at, (m.m).duplicate_count,
                (m.m).last_duplicate_at, (m.m).attempt_id) u
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

-- The one-event function's reads are equalities on the key already; a sequential scan is all it could pick.
ALTER FUNCTION keyward_claim_partitioned_one(text, text, text, text, integer, integer, text, text) SET enable_seqscan = off;

-- keyward_ensure_dedup_partitions (20261203000000_partition_mode), which every prune run in partition mode and
-- `keyward start` call, now also undoes an ANALYZE of an empty partition (an operator's database-wide ANALYZE,
-- `vacuumdb --analyze-in-stages` after an upgrade): such a partition (reltuples 0) is planned as holding no
-- rows at all, so even a lookup by key can be planned as a range scan of the expiry index. A partition that is
-- still empty is reset to "never analysed" (TRUNCATE of an empty table: PostgreSQL sets reltuples to -1 and
-- plans it as at least 10 pages, where the key lookup wins) and the cached plans are remade; one that already
-- holds keys is left to autovacuum, which analyses it after its first 50 rows. The emptiness is checked under
-- the partition's ACCESS EXCLUSIVE lock, waited for at most 100 ms (claims lock every partition they could
-- probe), so no key is ever truncated; a busy partition is retried at the next run. Returns the partitions
-- created, as before (the resets are not counted).
CREATE OR REPLACE FUNCTION keyward_ensure_dedup_partitions(days_ahead integer DEFAULT 3, lock_timeout_ms integer DEFAULT 0)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    today date := (now() AT TIME ZONE 'UTC')::date;
    day date;
    part_name text;
    lo timestamptz;
    hi timestamptz;
    created integer := 0;
    part regclass;
    is_empty boolean;
    caller_lock_timeout text := current_setting('lock_timeout');
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'dedup_keys'::regclass) <> 'p' THEN
        RETURN 0;
    END IF;
    IF lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
    END IF;
    FOR i IN 0..(keyward_dedup_days_needed() + days_ahead) LOOP
        day := today + i;
        part_name := keyward_dedup_partition_name(day);
        CONTINUE WHEN to_regclass(part_name) IS NOT NULL;
        PERFORM pg_advisory_xact_lock(hashtext('keyward_dedup_partitions'));
        CONTINUE WHEN to_regclass(part_name) IS NOT NULL;
        lo := day::timestamp AT TIME ZONE 'UTC';
        hi := (day + 1)::timestamp AT TIME ZONE 'UTC';
        EXECUTE format('CREATE TABLE %I (LIKE dedup_keys INCLUDING DEFAULTS INCLUDING CONSTRAINTS) WITH (fillfactor = 90)', part_name);
        EXECUTE format(
            'WITH moved AS (DELETE FROM dedup_keys_default WHERE expires_at >= %L AND expires_at < %L RETURNING *) '
            'INSERT INTO %I SELECT * FROM moved', lo, hi, part_name);
        EXECUTE format('ALTER TABLE dedup_keys ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part_name, lo, hi);
        created := created + 1;
    END LOOP;

    FOR part IN
        SELECT c.oid::regclass FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'dedup_keys'::regclass AND c.reltuples = 0 AND c.relpages = 0
        ORDER BY c.relname
    LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '100ms', true);
            EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', part);
            EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %s)', part) INTO is_empty;
            IF is_empty THEN
                EXECUTE format('TRUNCATE %s', part);
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            NULL; -- busy: the next run retries
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', CASE WHEN lock_timeout_ms > 0 THEN lock_timeout_ms || 'ms' ELSE caller_lock_timeout END, true);
    RETURN created;
END $$;
