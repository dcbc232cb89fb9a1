/**
 * Sources and their retention: create, list, read, change (applies to new claims), and the explicit
 * extension of live keys to the current TTL (never shortened). A source's TTL is always the sum of its
 * four parts (a CHECK enforces it too). Every change is recorded in the operator action log.
 */
import { KeywardError } from "../errors";
import { prisma } from "../db/client";
import { isUniqueViolation } from "../db/errors";
import { query } from "../db/sql";
import { parseOrThrow } from "../http/validate";
import { loadEnv } from "../config/env";
import { recordAction } from "../audit/actions";
import type { Principal } from "../auth/principal";
import { checkInvariants, type Invariant } from "../retention/invariants";
import {
  applySourceUpdate,
  checkTtl,
  createSourceRequest,
  ttlOf,
  updateSourceRequest,
  type CreateSourceRequest,
  type SourceInfo,
} from "./schema";
import { sourceName } from "../claims/schema";

/** Creates a source; recorded as `source.create` in the operator action log. */
export async function createSource(input: CreateSourceRequest, actor: Principal): Promise<SourceInfo> {
  const s = parseOrThrow(createSourceRequest, input);
  try {
    return await prisma().$transaction(async (tx) => {
      const created = await tx.source.create({ data: { ...s, ttlSeconds: ttlOf(s) }, omit: OMIT_SECRET });
      await recordAction(
        actor,
        { action: "source.create", target: { type: "source", id: s.name }, source: s.name, after: { ...s, ttlSeconds: created.ttlSeconds } },
        tx,
      );
      return created;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw KeywardError.conflict("source_exists", `source "${s.name}" already exists`);
    throw err;
  }
}

/**
 * The encrypted signing secret never leaves lib/sources/signing-secret.ts; keys_reach_until is the claim
 * statement's bookkeeping (partition mode), not part of a source's description.
 */
const OMIT_SECRET = { signingSecretEnc: true, signingSecretPrevEnc: true, keysReachUntil: true } as const;

export async function listSources(): Promise<SourceInfo[]> {
  return prisma().source.findMany({ orderBy: { name: "asc" }, omit: OMIT_SECRET });
}

export async function getSource(name: string): Promise<SourceInfo> {
  const n = parseOrThrow(sourceName, name);
  const s = await prisma().source.findUnique({ where: { name: n }, omit: OMIT_SECRET });
  if (!s) throw KeywardError.notFound("source_not_found", `no source named "${n}"`);
  return s;
}

const PART_KEYS = ["retryWindowSeconds", "queueLagSeconds", "clockSkewSeconds", "replaySeconds"] as const;
const snapshot = (s: SourceInfo) => ({
  preset: s.preset,
  ...Object.fromEntries(PART_KEYS.map((k) => [k, s[k]])),
  ttlSeconds: s.ttlSeconds,
  deadLetterRetentionSeconds: s.deadLetterRetentionSeconds,
  replayDestination: s.replayDestination,
});

/**
 * Changes a source's parts, preset, dead-letter retention or replay destination. The new TTL applies to claims from now on;
 * live keys keep their expiry (extend them explicitly with extendLiveKeys). Recorded with before/after.
 */
export async function updateSource(name: string, input: unknown, actor: Principal): Promise<SourceInfo> {
  const n = parseOrThrow(sourceName, name);
  const change = parseOrThrow(updateSourceRequest, input);
  return prisma().$transaction(async (tx) => {
    const [locked] = await tx.$queryRaw<{ name: string }[]>`SELECT name FROM sources WHERE name = ${n} FOR UPDATE`;
    if (!locked) throw KeywardError.notFound("source_not_found", `no source named "${n}"`);
    const before = (await tx.source.findUnique({ where: { name: n }, omit: OMIT_SECRET }))!;
    const merged = applySourceUpdate(before, change);
    checkTtl(merged);
    const updated = await tx.source.update({
      where: { name: n },
      data: {
        ...merged,
        ttlSeconds: ttlOf(merged),
        ...(change.deadLetterRetentionSeconds !== undefined ? { deadLetterRetentionSeconds: change.deadLetterRetentionSeconds } : {}),
        ...(change.replayDestination !== undefined ? { replayDestination: change.replayDestination } : {}),
        updatedAt: new Date(),
      },
      omit: OMIT_SECRET,
    });
    await recordAction(
      actor,
      { action: "source.update", target: { type: "source", id: n }, source: n, before: snapshot(before), after: snapshot(updated) },
      tx,
    );
    return updated;
  });
}

const EXTEND_BATCH = 5000;

/**
 * Extends the source's live keys to its current TTL, counted from each key's claim (`received_at`):
 * `expires_at = greatest(expires_at, received_at + TTL)`. Never shortens; expired keys are left alone
 * (they can no longer prevent anything). In bounded batches, each its own transaction. Recorded.
 */
export async function extendLiveKeys(name: string, actor: Principal): Promise<{ source: string; ttlSeconds: number; extended: number }> {
  const source = await getSource(name);
  let extended = 0;
  for (;;) {
    const rows = await query<{ n: number }>(
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
    );
    extended += rows[0].n;
    if (rows[0].n === 0) break;
  }
  await recordAction(actor, {
    action: "source.extend_keys",
    target: { type: "source", id: source.name },
    source: source.name,
    after: { ttlSeconds: source.ttlSeconds, extended },
  });
  return { source: source.name, ttlSeconds: source.ttlSeconds, extended };
}

/** Bytes per key assumed until the table holds enough keys to measure (heap tuple + two index entries). */
export const DEFAULT_BYTES_PER_KEY = 250;
const MIN_ROWS_TO_MEASURE = 10_000;

export type SourceReport = SourceInfo & {
  auditRetentionSeconds: number;
  invariants: Invariant[];
  projection: {
    /** Claims per second over the last hour. */
    claimRate: number;
    /** Steady-state live keys: claim rate × TTL. */
    keys: number;
    bytesPerKey: number;
    bytesPerKeyMeasured: boolean;
    bytes: number;
  };
};

/** Sources with their invariant checks and the projected steady-state size of their keys. */
export async function sourceReports(only?: string): Promise<SourceReport[]> {
  const sources = only ? [await getSource(only)] : await listSources();
  const auditRetentionSeconds = loadEnv().KEYWARD_AUDIT_RETENTION_DAYS * 86400;
  const [size] = await query<{ bytes: number; rows: number }>(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes,
            coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint AS rows
     FROM pg_class c
     -- The table itself, or its leaf partitions in partition mode (pg_partition_tree lists nothing for a
     -- plain table).
     WHERE c.oid IN (
       SELECT oid FROM pg_class WHERE oid = 'dedup_keys'::regclass AND relkind <> 'p'
       UNION ALL
       SELECT relid FROM pg_partition_tree('dedup_keys') WHERE isleaf AND relid <> 'dedup_keys'::regclass)`,
  );
  const measured = size.rows >= MIN_ROWS_TO_MEASURE;
  const bytesPerKey = measured ? Math.round(size.bytes / size.rows) : DEFAULT_BYTES_PER_KEY;
  const rates = await query<{ source: string; claimed: number }>(
    `SELECT source, sum(claimed)::bigint AS claimed FROM claim_counts
     WHERE bucket >= now() - interval '1 hour' ${only ? "AND source = $1" : ""} GROUP BY source`,
    only ? [only] : [],
  );
  const rateOf = new Map(rates.map((r) => [r.source, r.claimed / 3600]));
  return sources.map((s) => {
    const claimRate = rateOf.get(s.name) ?? 0;
    const keys = Math.round(claimRate * s.ttlSeconds);
    return {
      ...s,
      auditRetentionSeconds,
      invariants: checkInvariants({ ...s, auditRetentionSeconds }),
      projection: { claimRate, keys, bytesPerKey, bytesPerKeyMeasured: measured, bytes: keys * bytesPerKey },
    };
  });
}
