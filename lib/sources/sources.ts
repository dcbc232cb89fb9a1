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
import { claimRates, projectSize, sizeBasis, type SizeBasis } from "../metrics/projection";

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

/** The encrypted signing secret never leaves lib/sources/signing-secret.ts. */
const OMIT_SECRET = { signingSecretEnc: true, signingSecretPrevEnc: true } as const;

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

export { DEFAULT_BYTES_PER_KEY } from "../metrics/projection";

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
export async function sourceReports(only?: string): Promise<SourceReport[]> {
  const sources = only ? [await getSource(only)] : await listSources();
  const auditRetentionSeconds = loadEnv().KEYWARD_AUDIT_RETENTION_DAYS * 86400;
  const basis = await sizeBasis();
  const rates = await claimRates(only);
  return sources.map((s) => reportOf(s, { ...basis, claimRate: rates.get(s.name) ?? 0, auditRetentionSeconds }));
}
