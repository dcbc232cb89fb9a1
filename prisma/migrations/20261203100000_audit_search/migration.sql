-- Audit search (GET /api/v1/audit, /api/v1/events/{source}/{eventId}): indexes for the filters the
-- existing (source, event_id, at DESC), (kind, at DESC) and primary-key (at, id) indexes do not serve.
-- Created on the partitioned parent, so every monthly partition, present and future, gets them.

-- eventId without a source, and eventIdPrefix (LIKE 'prefix%'): text_pattern_ops serves both = and a
-- left-anchored LIKE whatever the database's collation.
CREATE INDEX "audit_events_event_id_pattern_idx" ON "audit_events"("event_id" text_pattern_ops);

-- One source's history over a time range, newest first.
CREATE INDEX "audit_events_source_at_idx" ON "audit_events"("source", "at" DESC);

-- Who did what: a person's or an API key's rows over a time range.
CREATE INDEX "audit_events_actor_at_idx" ON "audit_events"("actor", "at" DESC);

-- One event type over a time range.
CREATE INDEX "audit_events_event_type_at_idx" ON "audit_events"("event_type", "at" DESC);
