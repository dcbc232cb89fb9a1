-- Keyward on Citus, step 1 of 2 (docs/scaling.md, "Past one PostgreSQL: Citus"): the schema changes the
-- distribution needs, run on the coordinator before distribute.sql. A design, not a supported path yet:
-- test/db/citus-design.db.test.ts applies this file to a real Keyward schema (PostgreSQL, no Citus) and checks the
-- rules distribute.sql depends on, from pg_catalog.
--
-- The operator action log shares audit_events, with source NULL for actions on no source (a user, an API key).
-- A distribution column cannot hold NULL: those rows take '' (no source name can be empty), and the column
-- becomes NOT NULL. Code change that goes with it: lib/audit/actions.ts writes '' for "no source" and reads ''
-- back as null. The table is append-only (a trigger refuses UPDATE); this one rewrite is the exception.
ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only;
UPDATE audit_events SET source = '' WHERE source IS NULL;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only;
ALTER TABLE audit_events ALTER COLUMN source SET NOT NULL;

-- Citus requires every unique key of a distributed table to include its distribution column. Of the tables
-- distributed by `source`, only audit_events breaks it: its primary key is (at, id) (the month partitions
-- need `at`; `id` is the row's identity). It becomes (source, at, id); the time-range pages that read
-- (at, id) across sources keep a plain index on it. On a large audit history this rebuilds every month's
-- indexes: run it while copying into the new cluster, not on a live primary.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_pkey PRIMARY KEY (source, at, id);
CREATE INDEX audit_events_at_id_idx ON audit_events (at, id);
