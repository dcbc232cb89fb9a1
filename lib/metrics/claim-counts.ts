/**
 * Claim outcome counters. Each process counts outcomes in memory and its job (claimCountsJob, every
 * FLUSH_MS in `keyward start`'s registry) adds them to claim_counts (one upsert per source and minute), so
 * the claim hot path never contends on a shared counter row. `flushClaimCounts()` is called on shutdown
 * (and by tests and scripts that count without the job). Counts of a
 * process that crashes between flushes are lost: these are metrics, not the source of truth. Claims
 * made on a caller's own connection (a handle of its own, `claimEvent(r, options, db)`) are not counted, since the caller may roll them back.
 * The same flush statement adds the pending duplicate ages (duplicate-ages.ts) to duplicate_ages.
 */
import "server-only";
import { execute } from "@/lib/db/sql";
import { processGlobal } from "@/lib/process-global";
import type { Job } from "@/lib/jobs/registry";
import type { ClaimOutcome } from "@/lib/claims/schema";
import { agesFlushParams, BUCKET_COUNT, recordDuplicateAges, restorePendingAges, takePendingAges } from "./duplicate-ages";

const FLUSH_MS = 5000;

type Counts = Record<ClaimOutcome, number>;
// Process-wide (lib/process-global.ts): the custom server and Next's bundled route handlers load separate copies of this
// module, and the server's shutdown flush must see what the routes counted.
// `totals` counts since the process started, for GET /metrics (lib/metrics/prometheus.ts).
type CounterState = { pending: Map<string, Counts>; totals: Map<string, Counts> };
const state: CounterState = processGlobal("claimCounts", () => ({
  pending: new Map<string, Counts>(),
  totals: new Map<string, Counts>(),
}));
const pending = state.pending;

/** Counts a statement's outcomes, and the ages of its `duplicate` answers (duplicate-ages.ts) if given. */
export function countClaimOutcomes(source: string, outcomes: readonly ClaimOutcome[], duplicateAges: readonly number[] = []): void {
  recordDuplicateAges(source, duplicateAges);
  const c = countsOf(pending, source);
  const t = countsOf(state.totals, source);
  for (const o of outcomes) {
    c[o]++;
    t[o]++;
  }
}

/**
 * The flush as a job of the registry (lib/jobs/registry.ts, `keyward start`): every FLUSH_MS, one statement
 * for everything counted since the last pass (nothing when nothing was counted). Per process: every
 * server adds its own counts, so it needs no lease.
 */
export function claimCountsJob(): Job {
  return { name: "adding claim counts", everyMs: FLUSH_MS, run: () => flushClaimCounts() };
}

function countsOf(map: Map<string, Counts>, source: string): Counts {
  let c = map.get(source);
  if (!c) {
    c = { claimed: 0, duplicate: 0, in_flight: 0, payload_mismatch: 0 };
    map.set(source, c);
  }
  return c;
}

/** Claim outcomes counted by this process since it started, by source (read by the Prometheus exposition). */
export function claimOutcomeTotals(): ReadonlyMap<string, Readonly<Counts>> {
  return state.totals;
}

/**
 * Adds the pending counts to claim_counts and the pending duplicate ages to duplicate_ages, in one
 * statement; on failure both are kept for the next flush.
 */
export async function flushClaimCounts(): Promise<void> {
  const ages = takePendingAges().sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (pending.size === 0 && ages.length === 0) return;
  const batch = [...pending.entries()];
  pending.clear();
  try {
    await execute(
      `WITH counts AS (
         INSERT INTO claim_counts AS c (bucket, source, claimed, duplicate, in_flight, payload_mismatch)
         SELECT date_trunc('minute', now()), s, a, b, d, e
         FROM unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::int[]) AS t(s, a, b, d, e)
         ON CONFLICT (bucket, source) DO UPDATE SET
           claimed = c.claimed + excluded.claimed, duplicate = c.duplicate + excluded.duplicate,
           in_flight = c.in_flight + excluded.in_flight, payload_mismatch = c.payload_mismatch + excluded.payload_mismatch
         RETURNING 1),
       ages AS (
         -- $7 holds each source's $9 bucket counts one after the other
         INSERT INTO duplicate_ages AS d (bucket, source, counts, max_age_seconds)
         SELECT date_trunc('minute', now()), t.s, ($7::int[])[(t.i - 1) * $9::int + 1 : t.i * $9::int], t.m
         FROM unnest($6::text[], $8::float8[]) WITH ORDINALITY AS t(s, m, i)
         ON CONFLICT (source, bucket) DO UPDATE SET
           counts = ARRAY(SELECT x + y FROM unnest(d.counts, excluded.counts) WITH ORDINALITY AS u(x, y, k) ORDER BY k),
           max_age_seconds = greatest(d.max_age_seconds, excluded.max_age_seconds)
         RETURNING 1)
       SELECT (SELECT count(*) FROM counts) AS counts, (SELECT count(*) FROM ages) AS ages`,
      [
        batch.map(([s]) => s),
        batch.map(([, c]) => c.claimed),
        batch.map(([, c]) => c.duplicate),
        batch.map(([, c]) => c.in_flight),
        batch.map(([, c]) => c.payload_mismatch),
        ...agesFlushParams(ages),
        BUCKET_COUNT,
      ],
    );
  } catch (err) {
    for (const [source, c] of batch) {
      const cur = pending.get(source);
      if (cur) for (const k of Object.keys(c) as ClaimOutcome[]) cur[k] += c[k];
      else pending.set(source, c);
    }
    restorePendingAges(ages);
    throw err;
  }
}
