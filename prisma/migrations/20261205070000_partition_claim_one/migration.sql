-- Partition mode, one event: keyward_claim_partitioned_one(), the scalar twin of keyward_claim_partitioned()
-- (prisma/migrations/20261205051000_partition_claim_reach) for the common case of a claim of exactly one
-- distinct event (issue 15 §2). Same answer columns, same decisions, same correctness argument as the
-- array version's header, step by step:
--   1. the key's advisory lock, in the same lock space and with the same key as the array version
--      (20261203, hashtext(source || '/' || event_id)), so the two versions exclude each other: a single
--      claim and a batch that contains the key queue on one lock;
--   2. then (a new snapshot, which sees whatever the lock's previous holder committed) the source's TTL and
--      reach, and the same horizon;
--   3. the probe looks for the key only in partitions whose range starts before the horizon (pruned as each
--      execution starts), plus the DEFAULT partition. A key has at most one row (that is what the lock
--      keeps), so the probe reads one expiry. Not found (a first claim): insert it and its audit row, done.
--      Found: one UPDATE, aimed at the row's own partition by its expiry, locks the row, merges it with the
--      proposal through keyward_merge_claim (its newest version, if a `complete` changed it meanwhile) and
--      writes it; the audit row follows if this call claimed it. A row that went since the probe (a
--      release, the pruner) is not updated, and one that moved (an extension) cannot be: either way the
--      call fails with 40001 and is retried whole (lib/db/sql.ts), as in the array version, so a key that
--      exists is never inserted a second time;
--   4. last, keys_reach_until is read again: widened since step 2 → 40001, retried whole.
-- What it saves against the array version called with one event: the DISTINCT/ORDER BY query around the
-- lock, the array_agg probe, the unnest and the materialised input, the join back to it; on the found path
-- also the separate FOR UPDATE statement. Nothing here reads the catalog.
CREATE FUNCTION keyward_claim_partitioned_one(
    p_source text, p_event_id text, p_event_type text, p_payload_hash text, p_repeats integer,
    p_lease integer, p_actor text, p_attempt_id text)
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, is_repeat boolean, claim_token uuid, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer,
               attempt_id text, db_now timestamptz)
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
             duplicate_count, last_duplicate_at, attempt_id) =
            (SELECT m.event_type, m.payload_hash, m.status, m.claim_token, m.claim_kind, m.lease_expires_at,
                    m.received_at, m.expires_at, m.duplicate_count, m.last_duplicate_at, m.attempt_id
             FROM keyward_merge_claim(k, ROW(p_source, p_event_id, p_event_type, p_payload_hash,
                      CASE WHEN p_lease IS NULL THEN 'done' ELSE 'processing' END, token, 'claimed',
                      now() + make_interval(secs => p_lease), now(),
                      greatest(now() + make_interval(secs => ttl), now() + make_interval(secs => p_lease)),
                      p_repeats, CASE WHEN p_repeats > 0 THEN now() END, p_attempt_id)::dedup_keys) m)
        WHERE k.source = p_source AND k.event_id = p_event_id AND k.expires_at = found_expiry
        RETURNING k.event_type, k.event_id, k.status, k.claim_kind, k.claim_token, k.payload_hash, k.lease_expires_at,
                  k.received_at, k.expires_at, k.duplicate_count, k.attempt_id
        INTO stored_type, event_id, status, claim_kind, claim_token, payload_hash, lease_expires_at,
             received_at, expires_at, duplicate_count, attempt_id;
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
