/**
 * Duplicate ages: how old a key was when a duplicate of it arrived (database now() − the key's
 * received_at, i.e. since the first claim of the key as it stands), per source, in fixed log buckets.
 *
 * The claim statement answers each key's age as one extra column (lib/claims/claim.ts); the claim path
 * adds the ages of its `duplicate` answers here, in memory, and the claim-outcome flush
 * (lib/metrics/claim-counts.ts) adds them to duplicate_ages (one row per source and minute) in the same
 * statement as the outcome counters: no extra round trip per claim. Like the counters, ages of claims
 * made on a caller's own connection (a handle of its own, `claimEvent(r, options, db)`) are left out, and a crash between flushes loses at most
 * the last 5 seconds.
 *
 * Pure parts (bucketing, merging, quantiles) are unit-tested in test/metrics/duplicate-ages.db.test.ts.
 */
import { processGlobal } from "@/lib/process-global";

const M = 60;
const H = 3600;
const D = 86400;

/**
 * The upper edges of the buckets, in seconds: a duplicate of age a is counted in the first bucket with
 * a ≤ edge. One more bucket (index AGE_BUCKETS.length) holds everything older than 90 days.
 */
export const AGE_BUCKETS = [1, 10, M, 10 * M, H, 6 * H, D, 2 * D, 3 * D, 5 * D, 7 * D, 14 * D, 30 * D, 90 * D] as const;

/** Buckets stored per row: the fourteen edges and the overflow. */
export const BUCKET_COUNT = AGE_BUCKETS.length + 1;

/** How long duplicate_ages rows are kept. */
export const DUPLICATE_AGES_KEPT_DAYS = 90;

/** The bucket of a duplicate of `ageSeconds` (negative ages, from clock steps, count as 0). */
export function bucketIndex(ageSeconds: number): number {
  const age = Number.isFinite(ageSeconds) ? Math.max(0, ageSeconds) : Number.POSITIVE_INFINITY;
  for (let i = 0; i < AGE_BUCKETS.length; i++) if (age <= AGE_BUCKETS[i]) return i;
  return AGE_BUCKETS.length;
}

/** The upper edge of bucket `i` in seconds; null for the overflow bucket (> 90 d). */
export function bucketEdge(i: number): number | null {
  return i < AGE_BUCKETS.length ? AGE_BUCKETS[i] : null;
}

export type AgeHistogram = { counts: number[]; maxAgeSeconds: number };

export const emptyHistogram = (): AgeHistogram => ({ counts: new Array<number>(BUCKET_COUNT).fill(0), maxAgeSeconds: 0 });

/** Adds ages to a histogram in place. */
export function addAges(h: AgeHistogram, ages: readonly number[]): AgeHistogram {
  for (const a of ages) {
    h.counts[bucketIndex(a)]++;
    if (a > h.maxAgeSeconds) h.maxAgeSeconds = a;
  }
  return h;
}

/** Adds `b` into `a` in place. */
export function mergeHistogram(a: AgeHistogram, b: AgeHistogram): AgeHistogram {
  for (let i = 0; i < BUCKET_COUNT; i++) a.counts[i] += b.counts[i] ?? 0;
  a.maxAgeSeconds = Math.max(a.maxAgeSeconds, b.maxAgeSeconds);
  return a;
}

export const totalOf = (h: AgeHistogram) => h.counts.reduce((n, c) => n + c, 0);

/**
 * An upper bound of the q-quantile (0 < q ≤ 1) of the ages: the upper edge of the bucket holding it,
 * never above the largest age seen (for the overflow bucket, that largest age). null with no duplicates.
 * An upper bound on purpose: a TTL chosen from it covers the quantile.
 */
export function quantileUpperBound(h: AgeHistogram, q: number): number | null {
  const total = totalOf(h);
  if (total === 0) return null;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < BUCKET_COUNT; i++) {
    seen += h.counts[i];
    if (seen >= rank) {
      const edge = bucketEdge(i);
      return edge === null ? h.maxAgeSeconds : Math.min(edge, h.maxAgeSeconds);
    }
  }
  return h.maxAgeSeconds;
}

// ---------------------------------------------------------------------------------------------------
// The claim path's side: ages of the duplicate answers, gathered per source until the next flush.

/** The ages of a statement's `duplicate` answers: the statement's db_now − each key's received_at. */
export function duplicateAgesOf(
  results: readonly { eventId: string; outcome: string; repeat?: boolean }[],
  rows: readonly { event_id: string; received_at: Date; db_now: Date }[],
): number[] {
  const ages: number[] = [];
  let byId: Map<string, number | null | undefined> | undefined;
  for (const r of results) {
    if (r.outcome !== "duplicate" || r.repeat) continue;
    // Both times are the database's: its now() at the claim and the key's first claim (received_at).
    byId ??= new Map(rows.map((row) => [row.event_id, (row.db_now.getTime() - row.received_at.getTime()) / 1000]));
    // A repeat inside a batch of a key this batch just made has age 0.
    ages.push(Math.max(0, byId.get(r.eventId) ?? 0));
  }
  return ages;
}

// Process-wide like the outcome counters (lib/process-global.ts): the server and Next\'s route bundles load separate copies.
type AgeState = { pending: Map<string, AgeHistogram> };
const state: AgeState = processGlobal("duplicateAges", (): AgeState => ({
  pending: new Map<string, AgeHistogram>(),
}));

/** Adds a statement's duplicate ages to this process's pending histogram of `source`. */
export function recordDuplicateAges(source: string, ages: readonly number[]): void {
  if (ages.length === 0) return;
  let h = state.pending.get(source);
  if (!h) state.pending.set(source, (h = emptyHistogram()));
  addAges(h, ages);
}

/** Takes what is pending (for a flush); give it back with restorePendingAges if the flush fails. */
export function takePendingAges(): [string, AgeHistogram][] {
  const batch = [...state.pending.entries()];
  state.pending.clear();
  return batch;
}

export function restorePendingAges(batch: readonly [string, AgeHistogram][]): void {
  for (const [source, h] of batch) {
    const cur = state.pending.get(source);
    if (cur) mergeHistogram(cur, h);
    else state.pending.set(source, h);
  }
}

/** The flush's parameters for the ages: sources, their counts flattened (BUCKET_COUNT each), max ages. */
export function agesFlushParams(batch: readonly [string, AgeHistogram][]): [string[], number[], number[]] {
  return [batch.map(([s]) => s), batch.flatMap(([, h]) => h.counts), batch.map(([, h]) => h.maxAgeSeconds)];
}
