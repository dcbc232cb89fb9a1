/**
 * What an event's dedup key says now, for a dead letter or an event: one definition, read by one SQL join
 * and decided by one function, used by every screen and API that speaks of it (the preflight and the
 * re-check before each send, the dead-letter list's `key` and its "Keys at risk" counts, the event page).
 *
 * The facts: the key row looked up by (source, event_id) only (so it works on a partitioned dedup_keys
 * too) and the event's newest *deciding* audit row (claimed, lease_takeover, reclaimed_after_expiry,
 * completed or released), read through the (source, event_id, at DESC) index.
 *
 * The verdict (decideKey), by the database's `now`:
 *   state      alive (expires_at > now), in_flight (alive, and a handler's lease runs: lease_expires_at > now),
 *              expired (the row is still stored, expires_at <= now), none (no row: never claimed, released,
 *              or pruned after its expiry).
 *   processed  a handler took the event and did not give it back: the key is alive (a key exists only
 *              after a claim), or the newest deciding audit row is not a release. A claim counts even while
 *              its lease runs or after it lapsed: the handler may have done its work, so replaying without
 *              a live key could do it twice.
 *   released   no live key and the newest deciding row is a release (the key was deleted on purpose).
 *
 * keyFactsJoin is the SQL that reads the facts (the preflight, replay/facts.ts; the worker's lease batch,
 * replay/worker-sql.ts; the dead-letter list, deadletters/list.ts); KEY_STATE_SQL and KEY_PROCESSED_SQL are
 * decideKey in SQL, for the list's filters and counts. test/keys/verdict.db.test.ts pins every use to
 * decideKey on a matrix of key states. Pure module: no I/O, safe to import from the browser.
 */
import { z } from "zod";

/** The audit kinds that say a handler took the event. */
export const PROCESSED_KINDS = ["claimed", "lease_takeover", "reclaimed_after_expiry", "completed"] as const;
/** The audit kinds that decide "processed": PROCESSED_KINDS and released. */
export const DECIDING_KINDS = [...PROCESSED_KINDS, "released"] as const;
export type DecidingKind = (typeof DECIDING_KINDS)[number];

/** The key's row as it is now. */
export const KEY_STATES = ["alive", "in_flight", "expired", "none"] as const;
export type KeyStateName = (typeof KEY_STATES)[number];

/** What keyFactsJoin reads for one event (all null when there is neither a key nor a deciding row). */
export type KeyFacts = {
  expiresAt: Date | null;
  status: "done" | "processing" | null;
  leaseExpiresAt: Date | null;
  lastKind: DecidingKind | null;
  lastAt: Date | null;
};

export type KeyVerdict = {
  state: KeyStateName;
  /** expires_at > now. */
  alive: boolean;
  processed: boolean;
  /** When the deciding audit row says it was processed (its time); null when it does not say so. */
  processedAt: Date | null;
  /** The deciding kind behind processedAt / released, or null. */
  lastKind: DecidingKind | null;
  released: boolean;
  expiresAt: Date | null;
  leaseExpiresAt: Date | null;
};

/** The verdict on one key's facts at `now`. */
export function decideKey(f: KeyFacts, now: Date): KeyVerdict {
  const t = now.getTime();
  const alive = f.expiresAt !== null && f.expiresAt.getTime() > t;
  const state: KeyStateName =
    f.expiresAt === null
      ? "none"
      : !alive
        ? "expired"
        : f.status === "processing" && f.leaseExpiresAt !== null && f.leaseExpiresAt.getTime() > t
          ? "in_flight"
          : "alive";
  const byAudit = f.lastKind !== null && f.lastKind !== "released";
  return {
    state,
    alive,
    processed: alive || byAudit,
    processedAt: byAudit ? f.lastAt : null,
    lastKind: f.lastKind,
    released: !alive && f.lastKind === "released",
    expiresAt: f.expiresAt,
    leaseExpiresAt: f.leaseExpiresAt,
  };
}

/**
 * What a replay would do to the event, for a replay window of `windowSeconds` from `now` (the preflight's
 * categories; lib/replay/classify.ts explains them): in_flight (a handler holds it), alive (the key outlives
 * the window: a duplicate is rejected), expiring (alive now, not to the window's end), expired_processed (no
 * live key and processed: a replay processes it twice), never_processed (safe). Takes a verdict, or a
 * dead-letter list row's `key` (state, processed, expiry).
 */
export function categoryOf(
  v: { state: KeyStateName; processed: boolean; expiresAt: Date | null },
  now: Date,
  windowSeconds: number,
): "in_flight" | "alive" | "expiring" | "expired_processed" | "never_processed" {
  if (v.state === "in_flight") return "in_flight";
  if (v.state === "alive") return v.expiresAt!.getTime() > now.getTime() + windowSeconds * 1000 ? "alive" : "expiring";
  return v.processed ? "expired_processed" : "never_processed";
}

const kindList = DECIDING_KINDS.map((k) => `'${k}'`).join(", ");

/**
 * The one SQL reading of KeyFacts: two LATERAL lookups for the event `eventId` of source `source` (SQL
 * expressions: a column or a parameter), aliased `key` (expires_at, status, lease_expires_at) and `deciding`
 * (kind, at). Both as of the statement's now().
 */
export function keyFactsJoin(source: string, eventId: string): string {
  return `
LEFT JOIN LATERAL (
  SELECT expires_at, status, lease_expires_at FROM dedup_keys WHERE source = ${source} AND event_id = ${eventId}
) key ON true
LEFT JOIN LATERAL (
  SELECT kind, at FROM audit_events
  WHERE source = ${source} AND event_id = ${eventId} AND kind IN (${kindList})
  ORDER BY at DESC, id DESC LIMIT 1
) deciding ON true`;
}

/** keyFactsJoin's columns, named as KeyFactsRow. */
export const KEY_FACT_COLUMNS =
  "key.expires_at AS key_expires_at, key.status AS key_status, key.lease_expires_at AS key_lease_expires_at, deciding.kind AS last_kind, deciding.at AS last_at";

/** A row's KEY_FACT_COLUMNS. */
export const KeyFactsRow = z.object({
  key_expires_at: z.date().nullable(),
  key_status: z.string().nullable(),
  key_lease_expires_at: z.date().nullable(),
  last_kind: z.string().nullable(),
  last_at: z.date().nullable(),
});
export type KeyFactsRow = z.output<typeof KeyFactsRow>;

export function keyFactsOf(r: KeyFactsRow): KeyFacts {
  return {
    expiresAt: r.key_expires_at,
    status: (r.key_status as KeyFacts["status"]) ?? null,
    leaseExpiresAt: r.key_lease_expires_at,
    lastKind: (r.last_kind as DecidingKind | null) ?? null,
    lastAt: r.last_at,
  };
}

/** decideKey's `state` in SQL, over keyFactsJoin's aliases. */
export const KEY_STATE_SQL = `(CASE WHEN key.expires_at IS NULL THEN 'none'
      WHEN key.expires_at <= now() THEN 'expired'
      WHEN key.status = 'processing' AND key.lease_expires_at > now() THEN 'in_flight'
      ELSE 'alive' END)`;

/** decideKey's `processed` in SQL, over keyFactsJoin's aliases (never null). */
export const KEY_PROCESSED_SQL = `(coalesce(key.expires_at > now(), false) OR coalesce(deciding.kind <> 'released', false))`;

/** No live key, and processed: a replay would process it a second time (decideKey: !alive && processed). */
export const KEY_UNSAFE_SQL = `(NOT coalesce(key.expires_at > now(), false) AND coalesce(deciding.kind <> 'released', false))`;
