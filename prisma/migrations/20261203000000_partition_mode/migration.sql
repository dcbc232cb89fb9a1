-- Partition mode for the dedup table (issue 4), opt-in: this migration converts nothing. It only adds the
-- functions that switch an install to partition mode and back (`keyward partitions enable|disable`),
-- keep daily partitions created ahead, drop expired days whole, and claim without a unique index.
--
-- In partition mode dedup_keys is PARTITION BY RANGE (expires_at), one partition per UTC day of expiry,
-- plus a DEFAULT partition as a safety net. The primary key must include the partition column, so it
-- becomes (source, event_id, expires_at): PostgreSQL no longer enforces one row per (source, event_id).
-- keyward_claim_partitioned() keeps it unique (advisory lock per key, then a locking read across all
-- partitions, then the write); docs/architecture.md, "Partition mode", explains why that is correct.

-- keyward_merge_claim(cur dedup_keys, inc dedup_keys) takes dedup_keys' row type, so replacing the table
-- means dropping and re-creating it in the same transaction. Its body is the one of the init migration.
CREATE FUNCTION keyward_install_merge_claim() RETURNS void
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
    IF cur.status = 'processing' THEN
        IF cur.lease_expires_at <= now() THEN
            cur.claim_token := inc.claim_token;
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

-- Days a new key can live: the longest TTL (or lease, at most a day), rounded up.
CREATE FUNCTION keyward_dedup_days_needed() RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT greatest(1, ceil(coalesce(max(ttl_seconds), 0) / 86400.0))::int FROM sources
$$;

-- The partitions of dedup_keys with their ranges, read from the catalog (nothing is parsed from names):
-- range_start/range_end are NULL for the DEFAULT partition. estimated_rows is the planner's reltuples.
CREATE FUNCTION keyward_dedup_partitions()
RETURNS TABLE (name text, range_start timestamptz, range_end timestamptz, is_default boolean, estimated_rows bigint)
LANGUAGE sql STABLE AS $$
    SELECT c.relname::text,
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \(''([^'']+)''\)')::timestamptz,
           substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \(''([^'']+)''\)')::timestamptz,
           pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT',
           greatest(c.reltuples, 0)::bigint
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'dedup_keys'::regclass
    ORDER BY 3 NULLS LAST, 1
$$;

-- The UTC day partition's name and bounds.
CREATE FUNCTION keyward_dedup_partition_name(day date) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'dedup_keys_p' || to_char(day, 'YYYYMMDD') $$;

-- Creates the daily partitions from today (UTC, by the database clock) to today + the longest TTL +
-- days_ahead (idempotent), and returns how many it created. Rows of a day being created that sit in the
-- DEFAULT partition are moved into it in the same transaction (as for the audit months). Does nothing in
-- single-table mode. lock_timeout_ms bounds how long it waits for the DEFAULT partition's lock (0 = no bound).
CREATE FUNCTION keyward_ensure_dedup_partitions(days_ahead integer DEFAULT 3, lock_timeout_ms integer DEFAULT 0)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    today date := (now() AT TIME ZONE 'UTC')::date;
    day date;
    part_name text;
    lo timestamptz;
    hi timestamptz;
    created integer := 0;
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
    RETURN created;
END $$;

-- Drops one partition if its whole range has expired by the database clock (upper bound <= now());
-- returns its rows (reltuples once analysed, else an exact count, taken before the drop), or NULL when
-- it is not an expired partition of dedup_keys (the DEFAULT partition never is). DROP TABLE of a
-- partition takes an ACCESS EXCLUSIVE lock on dedup_keys; lock_timeout_ms bounds how long it waits for
-- it (and so how long claims queue behind it): on timeout it fails with 55P03 and the next run retries.
CREATE FUNCTION keyward_drop_dedup_partition(part_name text, lock_timeout_ms integer DEFAULT 500)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    SELECT CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint END INTO n
    FROM keyward_dedup_partitions() p JOIN pg_class c ON c.oid = to_regclass(quote_ident(p.name))
    WHERE p.name = part_name AND NOT p.is_default AND p.range_end <= now();
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF n IS NULL THEN
        EXECUTE format('SELECT count(*) FROM %I', part_name) INTO n;
    END IF;
    IF lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
    END IF;
    EXECUTE format('DROP TABLE %I', part_name);
    RETURN n;
END $$;

-- Switches dedup_keys to partition mode in ONE transaction under an ACCESS EXCLUSIVE lock (claims wait
-- for it; nothing is lost or half-converted): a partitioned table of the same columns and constraints,
-- one partition for every day from the oldest expiry to today + longest TTL + days_ahead (expiry days
-- before today share one partition, dropped whole by the next prune), a DEFAULT partition, the rows
-- copied, the old table dropped, keyward_merge_claim re-created for the new row type.
CREATE FUNCTION keyward_partitions_enable(days_ahead integer DEFAULT 3)
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
        CONSTRAINT dedup_keys_pkey PRIMARY KEY (source, event_id, expires_at),
        CONSTRAINT dedup_keys_status CHECK (status IN ('done', 'processing')),
        CONSTRAINT dedup_keys_lease_iff_processing CHECK ((status = 'processing') = (lease_expires_at IS NOT NULL)),
        CONSTRAINT dedup_keys_claim_kind CHECK (claim_kind IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry'))
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

-- The reverse, in one transaction: back to one table with the unique primary key (source, event_id).
-- If two rows of one key existed (they cannot, see keyward_claim_partitioned) the copy would fail and
-- nothing would change.
CREATE FUNCTION keyward_partitions_disable()
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
        CONSTRAINT dedup_keys_pkey PRIMARY KEY (source, event_id),
        CONSTRAINT dedup_keys_status CHECK (status IN ('done', 'processing')),
        CONSTRAINT dedup_keys_lease_iff_processing CHECK ((status = 'processing') = (lease_expires_at IS NOT NULL)),
        CONSTRAINT dedup_keys_claim_kind CHECK (claim_kind IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry'))
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

-- The claim statement of partition mode: the same parameters and the same answer columns as CLAIM_SQL
-- (lib/claims/claim.ts), one round trip. Without a unique index there is no ON CONFLICT, so:
--   1. a transaction-scoped advisory lock on every distinct key's hash, in sorted order (two overlapping
--      batches take their common locks in the same order: no deadlock). Claims of one key queue here;
--   2. then a NEW statement (under READ COMMITTED, a fresh snapshot: it sees whatever the previous holder
--      of the lock committed) locks the key's existing row in whichever partition it is (FOR UPDATE),
--      merges it through keyward_merge_claim, updates it (a new expiry moves the row to its day's
--      partition), inserts the keys that have no row, and writes the audit rows.
-- Only claims insert keys, and every claim holds the key's advisory lock from before its snapshot until
-- it commits, so no second row of a key can appear.
CREATE FUNCTION keyward_claim_partitioned(
    p_source text, p_event_ids text[], p_event_types text[], p_payload_hashes text[], p_repeats integer[],
    p_lease integer, p_actor text)
RETURNS TABLE (event_id text, status text, claim_kind text, claimed_now boolean, claim_token uuid, payload_hash text,
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
        SELECT i.event_id, i.event_type, i.payload_hash, i.repeats, gen_random_uuid() AS token
        FROM unnest(p_event_ids, p_event_types, p_payload_hashes, p_repeats) AS i(event_id, event_type, payload_hash, repeats)
    ),
    proposed AS MATERIALIZED (
        SELECT i.event_id, i.token,
               ROW(p_source, i.event_id, i.event_type, i.payload_hash,
                   CASE WHEN p_lease IS NULL THEN 'done' ELSE 'processing' END, i.token, 'claimed',
                   now() + make_interval(secs => p_lease), now(),
                   -- a key never expires while its lease runs (greatest() ignores a NULL lease)
                   greatest(now() + make_interval(secs => ttl), now() + make_interval(secs => p_lease)),
                   i.repeats, CASE WHEN i.repeats > 0 THEN now() END)::dedup_keys AS r
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
             duplicate_count, last_duplicate_at) =
            ((m.m).event_type, (m.m).payload_hash, (m.m).status, (m.m).claim_token, (m.m).claim_kind,
             (m.m).lease_expires_at, (m.m).received_at, (m.m).expires_at, (m.m).duplicate_count, (m.m).last_duplicate_at)
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
        SELECT s.*, s.claim_token = p.token AS claimed_now
        FROM (SELECT * FROM updated UNION ALL SELECT * FROM inserted) s JOIN proposed p ON p.event_id = s.event_id
    ),
    audited AS (
        INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
        SELECT j.source, j.event_id, j.event_type, j.claim_kind, p_actor,
               jsonb_strip_nulls(jsonb_build_object('expiresAt', j.expires_at, 'leaseExpiresAt', j.lease_expires_at,
                                                    'payloadHash', j.payload_hash))
        FROM joined j WHERE j.claimed_now
    )
    SELECT j.event_id, j.status, j.claim_kind, j.claimed_now,
           CASE WHEN j.claimed_now THEN j.claim_token END,
           j.payload_hash, j.lease_expires_at, j.received_at, j.expires_at, j.duplicate_count
    FROM joined j;
END $$;
