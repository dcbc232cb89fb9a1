/**
 * Preflight: classify a source's pending dead letters (chosen by id, or by a filter; an empty filter takes
 * them all) by what replaying each would do (classify.ts), and store the result for 15 minutes so a
 * replay starts from exactly what the operator saw. `extendPreflight` extends the live keys of that
 * preflight's alive and expiring items to last the replay window plus the send margin (never shortens,
 * never resurrects an expired key), records the action with counts, and re-classifies.
 */
import "server-only";
import { z } from "zod";
import { query, execute, sqlParams } from "@/lib/db/sql";
import { KeywardError } from "@/lib/errors";
import { loadEnv } from "@/lib/config/env";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { recordAction } from "@/lib/audit/actions";
import type { Principal } from "@/lib/auth/principal";
import { actorOf } from "@/lib/auth/principal";
import { getSource } from "@/lib/sources/sources";
import { likePattern } from "@/lib/deadletters/list";
import { classifyReplayBatch, countCategories, SEND_MARGIN_SECONDS } from "./classify";
import { readFacts } from "./facts";
import { checkReadiness, isReady } from "./readiness";
import {
  MAX_PREFLIGHT_ITEMS,
  PREFLIGHT_VALID_SECONDS,
  type Category,
  type Preflight,
  type PreflightItem,
  type PreflightSelection,
} from "./schema";

const Selected = z.object({ id: z.string(), event_id: z.string(), event_type: z.string() });
type Selected = z.output<typeof Selected>;

/** Transactions of many rows: longer bounds than Prisma's defaults (2 s to get a connection, 5 s in all). */
const TX = { timeout: 30_000, maxWait: 10_000 };

async function selectPending(source: string, r: PreflightSelection, db: Db): Promise<Selected[]> {
  const { values, p } = sqlParams(source);
  const where = ["d.source = $1", "d.status = 'pending'"];
  if (r.deadLetterIds) where.push(`d.id = ANY(${p(r.deadLetterIds)}::uuid[])`);
  if (r.filter?.from) where.push(`d.failed_at >= ${p(r.filter.from)}::timestamptz`);
  if (r.filter?.to) where.push(`d.failed_at < ${p(r.filter.to)}::timestamptz`);
  if (r.filter?.errorContains) where.push(`d.error ILIKE ${p(likePattern(r.filter.errorContains))}`);
  // Raw SQL: ILIKE with an escaped pattern and uuid[] matching, on the (source, status, failed_at) index.
  return query(
    Selected,
    `SELECT d.id, d.event_id, d.event_type FROM dead_letters d WHERE ${where.join(" AND ")}
     ORDER BY d.failed_at, d.id LIMIT ${p(MAX_PREFLIGHT_ITEMS + 1)}`,
    values,
    db,
  );
}

/** Classifies and stores (`retryOf`: the finished replay whose failed items it retries); 404 for an unknown source. */
export async function createPreflight(
  r: PreflightSelection,
  actor: Principal,
  options: { retryOf?: string } = {},
  db: Db = database(),
): Promise<Preflight> {
  const source = await getSource(r.source, db);
  const windowSeconds = r.replayWindowSeconds ?? source.replaySeconds;
  const selected = await selectPending(source.name, r, db);
  const truncated = selected.length > MAX_PREFLIGHT_ITEMS;
  const rows = selected.slice(0, MAX_PREFLIGHT_ITEMS);
  const facts = await readFacts(source.name, rows.map((s) => s.event_id), db);
  const classified = classifyReplayBatch(
    rows.map((s) => ({ deadLetterId: s.id, eventId: s.event_id, eventType: s.event_type })),
    facts.keys,
    facts.audit,
    facts.now,
    windowSeconds,
  );
  const createdAt = facts.now;
  const validUntil = new Date(createdAt.getTime() + PREFLIGHT_VALID_SECONDS * 1000);
  const id = await withTransaction(async (tx) => {
    const pf = await tx.prisma.replayPreflight.create({
      data: { source: source.name, createdAt, validUntil, windowSeconds, createdBy: actorOf(actor), truncated, retryOf: options.retryOf ?? null },
    });
    await tx.prisma.replayPreflightItem.createMany({
      data: classified.map((c, seq) => ({
        preflightId: pf.id,
        deadLetterId: c.deadLetterId,
        seq,
        eventId: c.eventId,
        eventType: c.eventType,
        category: c.category,
        keyExpiresAt: c.keyExpiresAt,
        processedAt: c.processedAt,
        reason: c.reason,
      })),
    });
    return pf.id;
  }, { ...TX, db });
  return getPreflight(id, actor, db);
}

/** The stored preflight with its readiness checks as `actor` sees them now (readiness.ts); 404 when unknown. */
export async function getPreflight(id: string, actor: Principal, db: Db = database()): Promise<Preflight> {
  const stored = await readPreflight(id, db);
  const checks = await checkReadiness(stored.source, actor, db);
  const env = loadEnv();
  const retryDefault = {
    maxAttempts: env.KEYWARD_REPLAY_RETRY_MAX_ATTEMPTS,
    initialDelaySeconds: env.KEYWARD_REPLAY_RETRY_INITIAL_MS / 1000,
    maxDelaySeconds: env.KEYWARD_REPLAY_RETRY_MAX_DELAY_MS / 1000,
  };
  return { ...stored, checks, ready: isReady(checks), retryDefault };
}

/** The stored preflight (items as classified at creation or at the last extend); 404 when unknown. */
async function readPreflight(id: string, db: Db): Promise<Omit<Preflight, "checks" | "ready" | "retryDefault">> {
  const pf = await db.prisma.replayPreflight.findUnique({ where: { id } });
  if (!pf) throw KeywardError.notFound("preflight_not_found", `no preflight ${id}`);
  const items = await db.prisma.replayPreflightItem.findMany({ where: { preflightId: id }, orderBy: { seq: "asc" } });
  const list: PreflightItem[] = items.map((i) => ({
    deadLetterId: i.deadLetterId,
    eventId: i.eventId,
    eventType: i.eventType,
    category: i.category as Category,
    keyExpiresAt: i.keyExpiresAt?.toISOString() ?? null,
    processedAt: i.processedAt?.toISOString() ?? null,
    reason: i.reason,
  }));
  return {
    preflightId: pf.id,
    source: pf.source,
    createdAt: pf.createdAt.toISOString(),
    validUntil: pf.validUntil.toISOString(),
    windowSeconds: pf.windowSeconds,
    extendedAt: pf.extendedAt?.toISOString() ?? null,
    truncated: pf.truncated,
    retryOf: pf.retryOf,
    counts: countCategories(list),
    items: list,
  };
}

function staleError(id: string, validUntil: Date): KeywardError {
  return KeywardError.conflict(
    "preflight_stale",
    `preflight ${id} was valid until ${validUntil.toISOString()}; keys change over time, run a new preflight`,
  );
}
export { staleError };

/**
 * $3 = window + SEND_MARGIN_SECONDS: a key extended to exactly now + window would still be `expiring`
 * (a key is dead at its expires_at) and would fail the pre-send re-check at the window's end.
 * Raw SQL: an update by the database clock that never shortens (greatest), on a possibly partitioned table.
 */
const EXTEND_SQL = `
UPDATE dedup_keys k SET expires_at = greatest(k.expires_at, now() + make_interval(secs => $3::int))
WHERE k.source = $1 AND k.event_id = ANY($2::text[]) AND k.expires_at > now()
  AND k.expires_at < now() + make_interval(secs => $3::int)`;

/** Raw SQL: one statement re-classifies every item (an unnest batch). */
const RECLASSIFY_SQL = `
UPDATE replay_preflight_items p SET category = u.category, key_expires_at = u.key_expires_at,
       processed_at = u.processed_at, reason = u.reason
FROM unnest($2::uuid[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[])
     AS u(dead_letter_id, category, key_expires_at, processed_at, reason)
WHERE p.preflight_id = $1::uuid AND p.dead_letter_id = u.dead_letter_id`;

/**
 * Extends the live keys of the preflight's alive and expiring items to at least now + window, records
 * `replay.preflight.extend` with the counts, and re-classifies the stored items, all in one transaction
 * (run again whole if a partitioned dedup_keys reports a serialization failure). 409 when stale.
 */
export async function extendPreflight(id: string, actor: Principal, db: Db = database()): Promise<{ extended: number; preflight: Preflight }> {
  const before = await readPreflight(id, db);
  if (Date.parse(before.validUntil) <= Date.now()) throw staleError(id, new Date(before.validUntil));
  const targets = before.items.filter((i) => i.category === "alive" || i.category === "expiring");
  const extended = await withTransaction(
    async (tx) => {
      // Raw SQL: Prisma has no FOR UPDATE; staleness is judged by the database clock.
      const [{ stale }] = await query(
        z.object({ stale: z.boolean() }),
        "SELECT valid_until <= now() AS stale FROM replay_preflights WHERE id = $1::uuid FOR UPDATE",
        [id],
        tx,
      );
      if (stale) throw staleError(id, new Date(before.validUntil));
      // Partition mode probes only a source's reach (keys_reach_until): widen it with the extension.
      if (targets.length) {
        await execute("SELECT keyward_widen_source_reach($1, now() + make_interval(secs => $2::int))", [
          before.source,
          before.windowSeconds + SEND_MARGIN_SECONDS,
        ], tx);
      }
      const n = targets.length
        ? await execute(EXTEND_SQL, [before.source, [...new Set(targets.map((t) => t.eventId))], before.windowSeconds + SEND_MARGIN_SECONDS], tx)
        : 0;
      // Re-classify every item against the keys as they are now (inside this transaction).
      const facts = await readFacts(before.source, before.items.map((i) => i.eventId), tx);
      const again = classifyReplayBatch(before.items, facts.keys, facts.audit, facts.now, before.windowSeconds);
      if (again.length) {
        await execute(RECLASSIFY_SQL, [
          id,
          again.map((c) => c.deadLetterId),
          again.map((c) => c.category),
          again.map((c) => c.keyExpiresAt?.toISOString() ?? null),
          again.map((c) => c.processedAt?.toISOString() ?? null),
          again.map((c) => c.reason),
        ], tx);
      }
      // Raw SQL: extended by the database clock, the one valid_until is compared with.
      await execute("UPDATE replay_preflights SET extended_at = now() WHERE id = $1::uuid", [id], tx);
      await recordAction(
        actor,
        {
          action: "replay.preflight.extend",
          target: { type: "replay_preflight", id },
          source: before.source,
          after: {
            extended: n,
            alive: before.counts.alive,
            expiring: before.counts.expiring,
            windowSeconds: before.windowSeconds,
            afterExtend: countCategories(again),
          },
        },
        tx,
      );
      return n;
    },
    { ...TX, retrySerialization: true, db },
  );
  return { extended, preflight: await getPreflight(id, actor, db) };
}
