-- Partition mode: a claim probes only the partitions that can hold the claiming source's live keys
-- (issue 15 §2), not every partition. docs/architecture.md, "Claim cost model".
--
-- The reach of a source: no key of it expires after
--     greatest(<time of the write> + greatest(its TTL, 1 day), sources.keys_reach_until)
-- A claim writes expires_at = now() + greatest(TTL, lease), and a lease is at most a day, so claims keep it by
-- construction. Everything else that can set an expiry beyond that widens keys_reach_until in the same
-- transaction: lowering a source's TTL (the trigger below keeps the old reach), and a replay preflight's
-- extension (lib/replay/preflight.ts calls keyward_widen_source_reach). Extending to the current TTL
-- (`keyward source extend`) stays within it. Keys that exist now get the table's latest expiry as their bound.

ALTER TABLE sources ADD COLUMN keys_reach_until TIMESTAMPTZ(6);

UPDATE sources SET keys_reach_until = (SELECT max(expires_at) FROM dedup_keys);

-- Widens a source's reach to cover an expiry set outside a claim (never narrows it).
CREATE FUNCTION keyward_widen_source_reach(p_source text, p_until timestamptz) RETURNS void
LANGUAGE sql AS $$
    UPDATE sources SET keys_reach_until = p_until
    WHERE name = p_source AND (keys_reach_until IS NULL OR keys_reach_until < p_until)
$$;

-- Lowering a TTL leaves keys written under the old one: they keep the old reach. clock_timestamp() is read
-- at the change, and a claim that still read the old TTL started before the change committed, so its key
-- expires before this bound (the hour covers the gap between this statement and the commit).
CREATE FUNCTION keyward_sources_keep_reach() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.ttl_seconds < OLD.ttl_seconds THEN
        NEW.keys_reach_until := greatest(NEW.keys_reach_until,
            clock_timestamp() + make_interval(secs => greatest(OLD.ttl_seconds, 86400)) + interval '1 hour');
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER "sources_keep_reach" BEFORE UPDATE OF "ttl_seconds" ON "sources"
    FOR EACH ROW EXECUTE FUNCTION keyward_sources_keep_reach();

-- The claim of partition mode, version 3: the same parameters and answer columns as before, plus `attempt_id`
-- and `db_now`
-- (the stored attempt id and the database time of the claim, as CLAIM_SQL answers them). What changed is
-- which partitions it touches:
--   1. the advisory lock of every distinct key, in sorted order (as before): claims of one key queue here;
--   2. then (a new snapshot, which sees whatever the lock's previous holder committed) the source's TTL and
--      reach, and the horizon: clock_timestamp() + greatest(TTL, 1 day) + 1 hour, or keys_reach_until if
--      later. Any claim of these keys that committed before this one got the lock started before now, so
--      its key expires before the horizon; so does every other key of the source, by the invariant above;
--   3. the probe looks for the keys only in partitions whose range starts before the horizon
--      (`expires_at < horizon`, pruned as each execution starts), plus the DEFAULT partition. No key found
--      (a first claim, the common case): insert, audit, done; nothing is locked or updated. Keys found: their
--      rows are locked in their own partitions (by their expiry), then merged and updated as before, in
--      those partitions only; a row that went or moved between the probe and the lock fails the call with
--      40001, retried whole (lib/db/sql.ts);
--   4. last, keys_reach_until is read again: if an extension widened it after step 2 (and may have moved a
--      key beyond the horizon before step 3's snapshot), the call fails with 40001 and is retried whole
--      (lib/db/sql.ts). An extension that commits after step 3's snapshot is caught there instead: locking
--      the row it moved fails with 40001 too.
-- Nothing here reads the catalog per call. Expired keys not yet dropped sit in partitions below the horizon.
DROP FUNCTION keyward_claim_partitioned(text, text[], text[], text[], integer[], integer, text, text[]);

CREATE FUNCTION keyward_claim_partitioned(
    p_source text, p_event_ids text[], p_event_types text[], p_payload_hashes text[], p_repeats integer[],
    p_lease integer, p_actor text, p_attempt_ids text[])
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, is_repeat boolean, claim_token uuid, payload_hash text,
               lease_expires_at timestamptz, received_at timestamptz, expires_at timestamptz, duplicate_count integer,
               attempt_id text, db_now timestamptz)
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
               j.payload_hash, j.lease_expires_at, j.received_at, j.expires_at, j.duplicate_count, j.attempt_id, now()
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
                       i.repeats, CASE WHEN i.repeats > 0 THEN now() END, i.attempt_id)::dedup_keys AS r
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
                 duplicate_count, last_duplicate_at, attempt_id) =
                ((m.m).event_type, (m.m).payload_hash, (m.m).status, (m.m).claim_token, (m.m).claim_kind,
                 (m.m).lease_expires_at, (m.m).received_at, (m.m).expires_at, (m.m).duplicate_count, (m.m).last_duplicate_at,
                 (m.m).attempt_id)
            FROM merged m
            WHERE k.source = p_source AND k.event_id = ANY (p_event_ids) AND k.event_id = m.event_id
              AND k.expires_at = ANY (found_expiries)
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
               j.payload_hash, j.lease_expires_at, j.received_at, j.expires_at, j.duplicate_count, j.attempt_id, now()
        FROM joined j;
    END IF;

    SELECT s.keys_reach_until INTO reach_after FROM sources s WHERE s.name = p_source;
    IF reach_after IS NOT NULL AND reach_after >= horizon THEN
        RAISE EXCEPTION 'the reach of source % widened during the claim', p_source
            USING ERRCODE = 'serialization_failure', HINT = 'retry the claim';
    END IF;
END $$;
