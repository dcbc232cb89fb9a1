/**
 * Sources and their retention: create, list, read, change (applies to new claims), and the explicit
 * extension of live keys to the current TTL (never shortened). A source's TTL is always the sum of its
 * four parts (a CHECK enforces it too). Every change is recorded in the operator action log.
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { KeywardError } from "@/lib/errors";
import { isUniqueViolation } from "@/lib/db/errors";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { loadEnv } from "@/lib/config/env";
import { recordAction } from "@/lib/audit/actions";
import type { Principal } from "@/lib/auth/principal";
import { checkInvariants } from "@/lib/retention/invariants";
import { applySourceUpdate, checkTtl, ttlOf, type ExtendedKeys, type NewSource, type SourceChange, type SourceInfo, type SourceReport } from "./schema";
import { destinationColumns } from "./replay-destination";
import { claimRates, projectSize, sizeBasis, type SizeBasis } from "@/lib/metrics/projection";

/** Creates a source; recorded as `source.create` in the operator action log. */
export async function createSource(s: NewSource, actor: Principal, db: Db = database()): Promise<SourceInfo> {
  try {
    return await withTransaction(
      async (tx) => {
        const created = await tx.prisma.source.create({ data: { ...s, ttlSeconds: ttlOf(s) }, omit: OMIT_SECRET });
        await recordAction(
          actor,
          { action: "source.create", target: { type: "source", id: s.name }, source: s.name, after: { ...s, ttlSeconds: created.ttlSeconds } },
          tx,
        );
        return created;
      },
      { db },
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw KeywardError.conflict("source_exists", `source "${s.name}" already exists`);
    throw err;
  }
}

/**
 * The encrypted signing secrets and AMQP destination never leave lib/sources/signing-secret.ts and
 * replay-destination.ts; keys_reach_until is the claim statement's bookkeeping (partition mode), not part
 * of a source's description.
 */
const OMIT_SECRET = { signingSecretEnc: true, signingSecretPrevEnc: true, replayDestinationEnc: true, keysReachUntil: true } as const;

export async function listSources(db: Db = database()): Promise<SourceInfo[]> {
  return db.prisma.source.findMany({ orderBy: { name: "asc" }, omit: OMIT_SECRET });
}

/** Every source's name, by name: what a picker lists (one index-only read, no report). */
export async function sourceNames(db: Db = database()): Promise<string[]> {
  return (await db.prisma.source.findMany({ select: { name: true }, orderBy: { name: "asc" } })).map((s) => s.name);
}

/** One source by its (parsed) name; 404 when there is none. */
export async function getSource(name: string, db: Db = database()): Promise<SourceInfo> {
  const s = await db.prisma.source.findUnique({ where: { name }, omit: OMIT_SECRET });
  if (!s) throw KeywardError.notFound("source_not_found", `no source named "${name}"`);
  return s;
}

const PART_KEYS = ["retryWindowSeconds", "queueLagSeconds", "clockSkewSeconds", "replaySeconds"] as const;
const snapshot = (s: SourceInfo) => ({
  preset: s.preset,
  ...Object.fromEntries(PART_KEYS.map((k) => [k, s[k]])),
  ttlSeconds: s.ttlSeconds,
  deadLetterRetentionSeconds: s.deadLetterRetentionSeconds,
  replayDestination: s.replayDestination,
  saveResults: s.saveResults,
});

/**
 * Changes a source's parts, preset, dead-letter retention, replay destination or saved results. The new TTL applies to claims from now on;
 * live keys keep their expiry (extend them explicitly with extendLiveKeys). Recorded with before/after.
 */
export async function updateSource(name: string, change: SourceChange, actor: Principal, db: Db = database()): Promise<SourceInfo> {
  // Before the transaction: encrypting reads the auth secret on another connection.
  const destination = change.replayDestination !== undefined ? await destinationColumns(change.replayDestination) : {};
  return withTransaction(
    async (tx) => {
      // Raw SQL: Prisma has no SELECT … FOR UPDATE; the lock makes two concurrent changes apply one after the other.
      const [locked] = await query(z.object({ name: z.string() }), "SELECT name FROM sources WHERE name = $1 FOR UPDATE", [name], tx);
      if (!locked) throw KeywardError.notFound("source_not_found", `no source named "${name}"`);
      const before = (await tx.prisma.source.findUnique({ where: { name }, omit: OMIT_SECRET }))!;
      const merged = applySourceUpdate(before, change);
      checkTtl(merged);
      const updated = await tx.prisma.source.update({
        where: { name },
        data: {
          ...merged,
          ttlSeconds: ttlOf(merged),
          ...(change.deadLetterRetentionSeconds !== undefined ? { deadLetterRetentionSeconds: change.deadLetterRetentionSeconds } : {}),
          ...(change.saveResults !== undefined ? { saveResults: change.saveResults } : {}),
          ...destination,
          updatedAt: new Date(),
        },
        omit: OMIT_SECRET,
      });
      await recordAction(
        actor,
        { action: "source.update", target: { type: "source", id: name }, source: name, before: snapshot(before), after: snapshot(updated) },
        tx,
      );
      return updated;
    },
    { db },
  );
}

const EXTEND_BATCH = 5000;

/**
 * Extends the source's live keys to its current TTL, counted from each key's claim (`received_at`):
 * `expires_at = greatest(expires_at, received_at + TTL)`. Never shortens; expired keys are left alone
 * (they can no longer prevent anything). In bounded batches, each its own transaction. Recorded.
 */
export async function extendLiveKeys(
  name: string,
  actor: Principal,
  db: Db = database(),
): Promise<ExtendedKeys> {
  const source = await getSource(name, db);
  let extended = 0;
  for (;;) {
    // Raw SQL: batches by (tableoid, ctid) with SKIP LOCKED, which Prisma cannot express.
    const rows = await query(
      z.object({ n: z.number() }),
      // A ctid names a row only within one table: in partition mode each partition has its own, so
      // the batch is identified by (tableoid, ctid). A new expiry may move a row to another day's partition.
      `WITH batch AS (
         SELECT tableoid, ctid FROM dedup_keys
         WHERE source = $1 AND expires_at > now() AND expires_at < received_at + make_interval(secs => $2)
         LIMIT $3 FOR UPDATE SKIP LOCKED)
       , upd AS (
         UPDATE dedup_keys d SET expires_at = d.received_at + make_interval(secs => $2)
         FROM batch WHERE d.tableoid = batch.tableoid AND d.ctid = batch.ctid AND d.source = $1
           AND d.expires_at > now() AND d.expires_at < d.received_at + make_interval(secs => $2)
         RETURNING 1)
       SELECT count(*)::int AS n FROM upd`,
      [source.name, source.ttlSeconds, EXTEND_BATCH],
      db,
    );
    extended += rows[0].n;
    if (rows[0].n === 0) break;
  }
  await recordAction(
    actor,
    {
      action: "source.extend_keys",
      target: { type: "source", id: source.name },
      source: source.name,
      after: { ttlSeconds: source.ttlSeconds, extended },
    },
    db,
  );
  return { source: source.name, ttlSeconds: source.ttlSeconds, extended };
}

export { DEFAULT_BYTES_PER_KEY } from "@/lib/metrics/projection";
export type { SourceReport } from "./schema";

/**
 * A source's report (invariant checks and projected size) from its settings: the one function that
 * checks a saved source, a previewed edit (lib/sources/preview.ts) and an advisor's recommendation alike.
 */
export function reportOf(s: SourceInfo, basis: SizeBasis & { claimRate: number; auditRetentionSeconds: number }): SourceReport {
  const { claimRate, auditRetentionSeconds, bytesPerKey, bytesPerKeyMeasured } = basis;
  return {
    ...s,
    auditRetentionSeconds,
    invariants: checkInvariants({ ...s, auditRetentionSeconds }),
    projection: { claimRate, ...projectSize(claimRate, s.ttlSeconds, bytesPerKey), bytesPerKey, bytesPerKeyMeasured },
  };
}

/** Sources with their invariant checks and the projected steady-state size of their keys. */
export async function sourceReports(only?: string, db: Db = database()): Promise<SourceReport[]> {
  const sources = only ? [await getSource(only, db)] : await listSources(db);
  const auditRetentionSeconds = loadEnv().KEYWARD_AUDIT_RETENTION_DAYS * 86400;
  const basis = await sizeBasis(db);
  const rates = await claimRates(only, db);
  return sources.map((s) => reportOf(s, { ...basis, claimRate: rates.get(s.name) ?? 0, auditRetentionSeconds }));
}
