/**
 * The TTL advisor's I/O (issue 14 §3): reads a source, its duplicate-age histogram and its late
 * duplicates over a window, applies the rules of advisor.ts, and prices both TTLs with the projection
 * every source report uses (lib/metrics/projection.ts). Also the late-duplicate list of a source.
 *
 * Cost: the source row; one range read of duplicate_ages on its (source, bucket) key; late_duplicates on
 * its (source, late_claim_at) index; catalog reads for bytes per key; an hour of claim_counts.
 */
import { query, type Queryable } from "../db/sql";
import { loadEnv } from "../config/env";
import { duplicateAgeHistogram } from "../metrics/duplicate-age-history";
import { bucketEdge } from "../metrics/duplicate-ages";
import { claimRates, projectSize, sizeBasis } from "../metrics/projection";
import { getSource } from "../sources/sources";
import { advise } from "./advisor";
import {
  encodeLateCursor,
  parseWindow,
  type AdviceResponse,
  type LateDuplicateExample,
  type LateDuplicateItem,
  type LateDuplicatesPage,
  type LateDuplicatesParams,
} from "./advice-schema";

const EXAMPLES = 10;

type LateRow = {
  event_id: string;
  event_type: string | null;
  first_claim_at: Date;
  late_claim_at: Date;
  late_at_text: string;
  gap_seconds: number;
  key_state: "pruned" | "unpruned";
  via_replay: boolean;
  late_actor: string | null;
};

const toExample = (r: LateRow): LateDuplicateExample => ({
  eventId: r.event_id,
  firstClaimAt: r.first_claim_at.toISOString(),
  lateClaimAt: r.late_claim_at.toISOString(),
  gapSeconds: r.gap_seconds,
});

const LATE_COLUMNS = `event_id, event_type, first_claim_at, late_claim_at,
  to_char(late_claim_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS late_at_text,
  gap_seconds, key_state, via_replay, late_actor`;

/** The advice for `name` over the window ending now (`windowText` as in `?window=30d`; default 30 days). */
export async function getAdvice(name: string, windowText?: string, on?: Queryable): Promise<AdviceResponse> {
  const window = parseWindow(windowText);
  const source = await getSource(name);
  const to = new Date();
  const from = new Date(to.getTime() - window.seconds * 1000);

  const [histogram, lateStats, examples, basis, rates] = await Promise.all([
    duplicateAgeHistogram(source.name, from, to, on),
    query<{ count: number; max_gap: number | null; via_replay: number }>(
      `SELECT count(*)::int AS count, max(gap_seconds) AS max_gap, (count(*) FILTER (WHERE via_replay))::int AS via_replay
       FROM late_duplicates WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3`,
      [source.name, from, to],
      on,
    ),
    query<LateRow>(
      `SELECT ${LATE_COLUMNS} FROM late_duplicates WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3
       ORDER BY gap_seconds DESC, late_claim_at DESC LIMIT ${EXAMPLES}`,
      [source.name, from, to],
      on,
    ),
    sizeBasis(on),
    claimRates(source.name, on),
  ]);
  const late = lateStats[0];
  const parts = {
    retryWindowSeconds: source.retryWindowSeconds,
    queueLagSeconds: source.queueLagSeconds,
    clockSkewSeconds: source.clockSkewSeconds,
    replaySeconds: source.replaySeconds,
  };
  const advice = advise({
    parts,
    deadLetterRetentionSeconds: source.deadLetterRetentionSeconds,
    auditRetentionSeconds: loadEnv().KEYWARD_AUDIT_RETENTION_DAYS * 86400,
    windowSeconds: window.seconds,
    histogram,
    late: { count: late.count, maxGapSeconds: late.max_gap, viaReplay: late.via_replay },
  });
  const claimRate = rates.get(source.name) ?? 0;
  return {
    source: source.name,
    window: window.text,
    observed: {
      ...advice.observed,
      histogram: histogram.counts.map((count, i) => ({ leSeconds: bucketEdge(i), count })),
      lateDuplicates: late.count,
      lateDuplicateExamples: examples.map(toExample),
    },
    current: { ttlSeconds: source.ttlSeconds, parts },
    recommended: advice.recommended,
    reason: advice.reason,
    projection: {
      currentBytes: projectSize(claimRate, source.ttlSeconds, basis.bytesPerKey).bytes,
      recommendedBytes: advice.recommended ? projectSize(claimRate, advice.recommended.ttlSeconds, basis.bytesPerKey).bytes : null,
    },
  };
}

/**
 * A source's late duplicates over the window, newest first, a page at a time (keyset on
 * (late_claim_at, event_id): a page never skips or repeats one), with a count per UTC day.
 */
export async function listLateDuplicates(
  name: string,
  q: LateDuplicatesParams,
  on?: Queryable,
): Promise<LateDuplicatesPage> {
  const window = parseWindow(q.window);
  const source = name;
  const after = q.cursor ?? null;
  await getSource(source);
  const to = new Date();
  const from = new Date(to.getTime() - window.seconds * 1000);
  const values: unknown[] = [source, from, to, q.limit + 1];
  const keyset = after ? `AND (late_claim_at, event_id) < ($5::timestamptz, $6)` : "";
  if (after) values.push(after.at, after.eventId);
  const [rows, days] = await Promise.all([
    query<LateRow>(
      `SELECT ${LATE_COLUMNS} FROM late_duplicates
       WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3 ${keyset}
       ORDER BY late_claim_at DESC, event_id DESC LIMIT $4`,
      values,
      on,
    ),
    query<{ day: string; count: number; via_replay: number }>(
      `SELECT to_char(date_trunc('day', late_claim_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, count(*)::int AS count,
              (count(*) FILTER (WHERE via_replay))::int AS via_replay
       FROM late_duplicates WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3
       GROUP BY 1 ORDER BY 1`,
      [source, from, to],
      on,
    ),
  ]);
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(
      (r): LateDuplicateItem => ({
        ...toExample(r),
        eventType: r.event_type,
        keyState: r.key_state,
        viaReplay: r.via_replay,
        lateActor: r.late_actor,
      }),
    ),
    next: rows.length > q.limit && last ? encodeLateCursor(last.late_at_text, last.event_id) : null,
    perDay: fillDays(days, from, to),
  };
}

/** Every UTC day from `from` to `to`, with the counts found (0 elsewhere). Pure. */
export function fillDays(found: readonly { day: string; count: number; via_replay: number }[], from: Date, to: Date) {
  const byDay = new Map(found.map((d) => [d.day, d]));
  const out: { day: string; count: number; viaReplay: number }[] = [];
  const d = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth(), from.getUTCDate()));
  for (; d.getTime() < to.getTime(); d.setUTCDate(d.getUTCDate() + 1)) {
    const day = d.toISOString().slice(0, 10);
    const f = byDay.get(day);
    out.push({ day, count: f?.count ?? 0, viaReplay: f?.via_replay ?? 0 });
  }
  return out;
}
