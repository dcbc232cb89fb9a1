-- Keyward initial schema: sources, the dedup table, the partitioned audit history, API keys.

-- Senders. TTL = retry window + queue-lag + clock-skew + replay margins, finite (at most 90 days).
CREATE TABLE "sources" (
    "name" TEXT NOT NULL,
    "retry_window_seconds" INTEGER NOT NULL,
    "queue_lag_seconds" INTEGER NOT NULL,
    "clock_skew_seconds" INTEGER NOT NULL,
    "replay_seconds" INTEGER NOT NULL,
    "ttl_seconds" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    CONSTRAINT "sources_pkey" PRIMARY KEY ("name"),
    CONSTRAINT "sources_name_format" CHECK ("name" ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    CONSTRAINT "sources_parts_nonnegative" CHECK (
        "retry_window_seconds" >= 0 AND "queue_lag_seconds" >= 0 AND "clock_skew_seconds" >= 0 AND "replay_seconds" >= 0),
    CONSTRAINT "sources_ttl_is_sum" CHECK (
        "ttl_seconds" = "retry_window_seconds" + "queue_lag_seconds" + "clock_skew_seconds" + "replay_seconds"),
    CONSTRAINT "sources_ttl_finite" CHECK ("ttl_seconds" > 0 AND "ttl_seconds" <= 7776000)
);

-- The dedup table. No foreign key to sources on purpose: a FK check takes a KEY SHARE lock on the
-- source row for every claim, which turns one hot sender into a multixact hotspot. The claim statement
-- joins sources itself, so a key can only be created for an existing source.
CREATE TABLE "dedup_keys" (
    "source" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "payload_hash" TEXT,
    "status" TEXT NOT NULL,
    "claim_token" UUID NOT NULL,
    "claim_kind" TEXT NOT NULL,
    "lease_expires_at" TIMESTAMPTZ(6),
    "received_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "expires_at" TIMESTAMPTZ(6) NOT NULL,
    "duplicate_count" INTEGER NOT NULL DEFAULT 0,
    "last_duplicate_at" TIMESTAMPTZ(6),
    CONSTRAINT "dedup_keys_pkey" PRIMARY KEY ("source", "event_id"),
    CONSTRAINT "dedup_keys_status" CHECK ("status" IN ('done', 'processing')),
    CONSTRAINT "dedup_keys_lease_iff_processing" CHECK (("status" = 'processing') = ("lease_expires_at" IS NOT NULL)),
    CONSTRAINT "dedup_keys_claim_kind" CHECK ("claim_kind" IN ('claimed', 'lease_takeover', 'reclaimed_after_expiry'))
) WITH (fillfactor = 90);

CREATE INDEX "dedup_keys_expires_at_idx" ON "dedup_keys"("expires_at");

-- Audit history: append-only, long-lived, range-partitioned by month on "at".
CREATE SEQUENCE "audit_events_id_seq" AS BIGINT;

CREATE TABLE "audit_events" (
    "id" BIGINT NOT NULL DEFAULT nextval('audit_events_id_seq'),
    "at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "source" TEXT,
    "event_id" TEXT,
    "event_type" TEXT,
    "kind" TEXT NOT NULL,
    "actor" TEXT,
    "detail" JSONB,
    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("at", "id")
) PARTITION BY RANGE ("at");

ALTER SEQUENCE "audit_events_id_seq" OWNED BY "audit_events"."id";

CREATE INDEX "audit_events_source_event_id_at_idx" ON "audit_events"("source", "event_id", "at" DESC);
CREATE INDEX "audit_events_kind_at_idx" ON "audit_events"("kind", "at" DESC);

-- Safety net: an insert never fails for want of a partition.
CREATE TABLE "audit_events_default" PARTITION OF "audit_events" DEFAULT;

-- Creates the monthly partitions from this month to `months_ahead` months ahead (idempotent). If the
-- DEFAULT partition already holds rows of a month being created, they are moved into the new partition
-- in the same transaction, so no row is lost and the new partition can be attached.
CREATE FUNCTION keyward_ensure_audit_partitions(months_ahead INTEGER DEFAULT 3) RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    month_start DATE;
    month_end DATE;
    part_name TEXT;
    created INTEGER := 0;
BEGIN
    FOR i IN 0..months_ahead LOOP
        month_start := (date_trunc('month', now()) + make_interval(months => i))::date;
        month_end := (month_start + INTERVAL '1 month')::date;
        part_name := format('audit_events_%s', to_char(month_start, 'YYYY_MM'));
        CONTINUE WHEN to_regclass(part_name) IS NOT NULL;
        PERFORM pg_advisory_xact_lock(hashtext('keyward_audit_partitions'));
        CONTINUE WHEN to_regclass(part_name) IS NOT NULL;
        EXECUTE format('CREATE TABLE %I (LIKE audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part_name);
        -- The one sanctioned row move: lift the append-only guard for this transaction only.
        PERFORM set_config('keyward.audit_maintenance', 'on', true);
        EXECUTE format(
            'WITH moved AS (DELETE FROM audit_events_default WHERE at >= %L AND at < %L RETURNING *) '
            'INSERT INTO %I SELECT * FROM moved', month_start, month_end, part_name);
        EXECUTE format('ALTER TABLE audit_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
            part_name, month_start, month_end);
        created := created + 1;
    END LOOP;
    RETURN created;
END $$;

-- Append-only: rows of the audit history are never updated or deleted. Retention drops whole monthly
-- partitions (DROP fires no row trigger); the partition function moves a month out of the DEFAULT
-- partition under a transaction-local setting. A guard against accidents and bugs, not against a
-- superuser, who can drop the trigger.
CREATE FUNCTION keyward_audit_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('keyward.audit_maintenance', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'restrict_violation', HINT = 'retention drops whole monthly partitions';
END $$;

CREATE TRIGGER "audit_events_append_only" BEFORE UPDATE OR DELETE ON "audit_events"
    FOR EACH ROW EXECUTE FUNCTION keyward_audit_append_only();

SELECT keyward_ensure_audit_partitions(3);

-- Resolves a claim that conflicts with an existing key (used by ON CONFLICT DO UPDATE of the claim
-- statement). `cur` is the stored key, `inc` the claim being attempted; returns the row to store.
--   * cur expired (pruned or not): the claim starts a new lifetime        -> reclaimed_after_expiry
--     (a key never expires while its lease runs: expires_at >= lease_expires_at always)
--   * both carry a payload hash and they differ: keep cur (payload_mismatch)
--   * cur in flight, lease over: the new claim takes the lease over       -> lease_takeover
--   * cur in flight, lease running: keep cur (in_flight)
--   * otherwise a duplicate: count it (inc.duplicate_count carries in-batch repeats)
-- The caller recognises its own claim by the claim token it proposed.
CREATE FUNCTION keyward_merge_claim(cur dedup_keys, inc dedup_keys) RETURNS dedup_keys
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
END $$;

-- Claim outcomes per source and minute. Each server process counts in memory and adds its counts here
-- every few seconds (lib/metrics/claim-counts.ts), so the claim hot path never writes a shared counter row.
CREATE TABLE "claim_counts" (
    "bucket" TIMESTAMPTZ(6) NOT NULL,
    "source" TEXT NOT NULL,
    "claimed" INTEGER NOT NULL DEFAULT 0,
    "duplicate" INTEGER NOT NULL DEFAULT 0,
    "in_flight" INTEGER NOT NULL DEFAULT 0,
    "payload_mismatch" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "claim_counts_pkey" PRIMARY KEY ("bucket", "source")
);

CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "scopes" TEXT[],
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
    "last_used_at" TIMESTAMPTZ(6),
    "revoked_at" TIMESTAMPTZ(6),
    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "api_keys_name_key" ON "api_keys"("name");
