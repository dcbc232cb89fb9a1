-- A claim that carries an attemptId, of a key whose stored claim carried none (a claim from a caller that sends
-- no attemptId, the batch API without one, the embedded tools, or a key made before attemptIds existed), was
-- answered 500. `s.attempt_id = p.attempt_id` is NULL when the stored attempt id is NULL, so is_repeat was NULL,
-- not false, and the answer's row check refused it (lib/claims/classify.ts). Such a claim is not a repeat: it
-- is answered as any other claim of a held key (`duplicate`, or `in_flight` while a lease runs).
-- keyward_claim_partitioned (20261207000000_partition_claim_plans) is re-created unchanged but for that
-- comparison, now `IS NOT DISTINCT FROM` as in keyward_claim_partitioned_one; the plain-table statements are in
-- lib/claims/claim.ts.

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
                   s.claim_token <> p.token AND p.attempt_id IS NOT NULL AND s.attempt_id IS NOT DISTINCT FROM p.attempt_id
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

