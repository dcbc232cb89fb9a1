/**
 * Preflight classification and the re-check before each send: pure functions of the dead letters, their
 * dedup keys, their audit facts and the database's `now`. No I/O; exhaustively unit-tested
 * (test/replay/classify.unit.test.ts). The SQL that gathers the inputs is in preflight.ts and executor.ts.
 *
 * A replay is safe only while the event's dedup key is alive: then a replay of an event that was in fact
 * processed is rejected by the handler's claim as a duplicate. Categories:
 *   alive             key alive beyond the replay window (expires_at > now + window): the claim protects.
 *   expiring          key alive now but expires_at <= now + window: extend first, or it may lapse mid-replay.
 *   expired_processed no live key, and the audit history says it was processed (the latest of claimed /
 *                     lease_takeover / reclaimed_after_expiry / completed is not followed by released):
 *                     replaying it processes it twice.
 *   never_processed   no live key and no processed record (never claimed, or released after its claim): safe.
 *   in_flight         claimed with a running lease: its handler is working on it now; wait.
 * A key is alive while expires_at > now (keyward_merge_claim reclaims at expires_at <= now); a lease runs
 * while lease_expires_at > now. A lapsed lease on a live key is classified by the key's expiry: the next
 * claim takes the lease over, exactly as for a sender's own retry. The key's state, "processed" and the
 * category are decided by lib/keys/verdict.ts (decideKey, categoryOf), the one verdict every screen and
 * API uses; this module words it and applies it to a batch and to the re-check before each send.
 */
import { categoryOf, decideKey, type DecidingKind, type KeyVerdict } from "@/lib/keys/verdict";
import type { Category } from "./schema";

export { categoryOf, DECIDING_KINDS, PROCESSED_KINDS } from "@/lib/keys/verdict";

export type ClassifyItem = { deadLetterId: string; eventId: string; eventType: string };

export type KeyFact = {
  eventId: string;
  expiresAt: Date;
  status: "done" | "processing";
  leaseExpiresAt: Date | null;
};

/** The newest audit row of the event among the kinds that decide "processed", or none. */
export type AuditFact = {
  eventId: string;
  lastKind: DecidingKind;
  lastAt: Date;
};

/** The verdict (lib/keys/verdict.ts decideKey) on an event's key and audit fact. */
export function verdictOf(key: KeyFact | undefined, fact: AuditFact | undefined, now: Date): KeyVerdict {
  return decideKey(
    {
      expiresAt: key?.expiresAt ?? null,
      status: key?.status ?? null,
      leaseExpiresAt: key?.leaseExpiresAt ?? null,
      lastKind: fact?.lastKind ?? null,
      lastAt: fact?.lastAt ?? null,
    },
    now,
  );
}

export type Classified = ClassifyItem & {
  category: Category;
  keyExpiresAt: Date | null;
  processedAt: Date | null;
  reason: string;
};

const iso = (d: Date) => d.toISOString();

/** Classifies one dead letter. */
export function classifyOne(
  item: ClassifyItem,
  key: KeyFact | undefined,
  fact: AuditFact | undefined,
  now: Date,
  windowSeconds: number,
): Classified {
  const v = verdictOf(key, fact, now);
  const category = categoryOf(v, now, windowSeconds);
  const out = (reason: string): Classified => ({ ...item, category, keyExpiresAt: v.expiresAt, processedAt: v.processedAt, reason });
  const lapsed = v.alive && key?.status === "processing" ? " Its lease lapsed without completion, so the replay's claim takes it over." : "";
  const gone = key ? `The key expired at ${iso(key.expiresAt)}` : "There is no key";
  switch (category) {
    case "in_flight":
      return out(`A handler holds the claim until ${iso(v.leaseExpiresAt!)}; wait for it to complete or release.`);
    case "alive":
      return out(`The key lives until ${iso(v.expiresAt!)}, past the replay window: a duplicate is rejected by the claim.${lapsed}`);
    case "expiring":
      return out(`The key expires at ${iso(v.expiresAt!)}, before the replay window ends: extend it first.${lapsed}`);
    case "expired_processed":
      return out(`${gone}, and the event was processed (${v.lastKind} at ${iso(v.processedAt!)}): replaying it processes it twice.`);
    default: {
      const why = v.released ? `it was released at ${iso(fact!.lastAt)} after its claim` : "no one ever claimed it";
      return out(`${gone} and ${why}: replaying it is safe.`);
    }
  }
}

/** Classifies a batch of dead letters of one source (keys and facts matched by event id). */
export function classifyReplayBatch(
  items: readonly ClassifyItem[],
  keys: readonly KeyFact[],
  auditFacts: readonly AuditFact[],
  now: Date,
  windowSeconds: number,
): Classified[] {
  const keyOf = new Map(keys.map((k) => [k.eventId, k]));
  const factOf = new Map(auditFacts.map((f) => [f.eventId, f]));
  return items.map((i) => classifyOne(i, keyOf.get(i.eventId), factOf.get(i.eventId), now, windowSeconds));
}

export type CategoryCounts = Record<Category, number> & { total: number };

export function countCategories(items: readonly { category: Category }[]): CategoryCounts {
  const c: CategoryCounts = { alive: 0, expiring: 0, expired_processed: 0, never_processed: 0, in_flight: 0, total: 0 };
  for (const i of items) {
    c[i.category]++;
    c.total++;
  }
  return c;
}

/** How long a key must still live at the moment of a send to count as protecting it (delivery timeout + skew). */
export const SEND_MARGIN_SECONDS = 60;

/**
 * The re-check just before each send. Safe when the key is alive for at least SEND_MARGIN_SECONDS more
 * (the destination's claim rejects a processed event as a duplicate, or reports it in flight), or when no
 * such key exists and the audit history says the event was not processed. A forced replay (an operator
 * gave a reason) sends expired_processed items anyway; every other item that became unsafe is skipped.
 */
export function recheckBeforeSend(
  key: KeyFact | undefined,
  fact: AuditFact | undefined,
  now: Date,
  forced: { category: Category; forced: boolean },
): { safe: boolean; reason: string } {
  // The key must live SEND_MARGIN_SECONDS past now: judge it as of then.
  const v = verdictOf(key, fact, new Date(now.getTime() + SEND_MARGIN_SECONDS * 1000));
  if (v.alive) return { safe: true, reason: `key alive until ${iso(v.expiresAt!)}` };
  if (!v.processedAt) return { safe: true, reason: "no live key, and the audit history has no processing of it" };
  if (forced.forced && forced.category === "expired_processed") {
    return { safe: true, reason: `forced: processed at ${iso(v.processedAt)} and no live key; sent on the operator's reason` };
  }
  const t = now.getTime();
  const keyText = key
    ? key.expiresAt.getTime() > t
      ? `the key expires at ${iso(key.expiresAt)}, within ${SEND_MARGIN_SECONDS} s`
      : `the key expired at ${iso(key.expiresAt)}`
    : "the key is gone";
  return { safe: false, reason: `unsafe now: ${keyText} and the event was processed (${v.lastKind} at ${iso(v.processedAt)})` };
}
