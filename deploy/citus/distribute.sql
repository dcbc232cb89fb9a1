-- Keyward on Citus, step 2 of 2 (docs/scaling.md): after prepare.sql, on the coordinator of a Citus cluster
-- (Citus is not in Debian; this file is not run by the tests, which check its rules and that it names every
-- table the design distributes: test/db/citus-design.db.test.ts).
--
-- The claim path's tables are distributed by `source` and co-located, so a claim (one source) is a
-- single-shard transaction on one worker: the key, its audit row, the counters.
SET citus.enable_unsafe_triggers = on; -- audit_events' append-only trigger, on every shard
SELECT create_reference_table('sources');
SELECT create_reference_table('api_keys');
SELECT create_reference_table('settings');
SELECT create_distributed_table('dedup_keys', 'source');
SELECT create_distributed_table('audit_events', 'source', colocate_with => 'dedup_keys');
SELECT create_distributed_table('late_duplicates', 'source', colocate_with => 'dedup_keys');
SELECT create_distributed_table('duplicate_ages', 'source', colocate_with => 'dedup_keys');
SELECT create_distributed_table('claim_counts', 'source', colocate_with => 'dedup_keys');
-- The partition-mode claim functions run where the source's shard is (they read `sources`, a reference table,
-- locally, and take their advisory locks on that worker, where every claim of the source goes).
SELECT create_distributed_function('keyward_claim_partitioned(text, text[], text[], text[], integer[], integer, text, text[])',
                                   'p_source', colocate_with => 'dedup_keys');
SELECT create_distributed_function('keyward_claim_partitioned_one(text, text, text, text, integer, integer, text, text)',
                                   'p_source', colocate_with => 'dedup_keys');
-- Every other table stays on the coordinator (a Citus local table where it references `sources`).
SELECT citus_add_local_table_to_metadata('dead_letters');
SELECT citus_add_local_table_to_metadata('inlets');
SELECT citus_add_local_table_to_metadata('replays');
SELECT citus_add_local_table_to_metadata('replay_preflights');
