/**
 * The TTL advisor's I/O (issue 14 §3): reads a source, its duplicate-age histogram and its late
 * duplicates over a window, applies the rules of advisor.ts, and prices both TTLs with the projection
 * every source report uses (lib/metrics/projection.ts). Also the late-duplicate list of a source.
 *
 * Cost: the source row; one range read of duplicate_ages on its (source, bucket) key; late_duplicates on
 * its (source, late_claim_at) index; the source's TTL edits from its operator log (audit (source, at)
 * index, at most TTL_EDITS_READ); catalog reads for bytes per key; an hour of claim_counts.
 */
import { z } from "zod";
import type { Db } from "@/lib/db/transaction";
import { query, sqlParams } from "@/lib/db/sql";
import { loadEnv } from "@/lib/config/env";
import { duplicateAgeHistogram } from "@/lib/metrics/duplicate-age-history";
import { bucketEdge } from "@/lib/metrics/duplicate-ages";
import { claimRates, projectSize, sizeBasis } from "@/lib/metrics/projection";
import { getSource } from "@/lib/sources/sources";
import { advise } from "./advisor";
import { judgeLateDuplicates, ttlEpochs, type LateGroup, type TtlEdit } from "./evidence";
import {
  encodeLateCursor,
  type AdviceResponse,
  type AdviceWindow,
  type LateDuplicateExample,
  type LateDuplicateItem,
  type LateDuplicatesPage,
  type LateDuplicatesParams,
} from "./advice-schema";

const EXAMPLES = 10;
/** The newest TTL edits read for the TTL history (older late duplicates are judged against the oldest known). */
const TTL_EDITS_READ = 500;

/**
 * Raw SQL: the source's TTL history from its operator log (source.create / source.update, with the TTL
 * before and after), newest first, on the audit (source, at) index; the JSON fields Prisma cannot filter on.
 */
const TTL_EDITS_SQL = `
SELECT at, (detail->'before'->>'ttlSeconds')::int AS before_ttl, (detail->'after'->>'ttlSeconds')::int AS after_ttl
FROM audit_events
WHERE source = $1 AND kind = 'operator' AND detail->>'action' IN ('source.create', 'source.update')
  AND coalesce(detail->>'outcome', 'ok') = 'ok' AND detail->'after'->>'ttlSeconds' IS NOT NULL
ORDER BY at DESC, id DESC LIMIT ${TTL_EDITS_READ}`;

/** The source's TTL edits, oldest first. */
async function ttlEdits(source: string, db?: Db): Promise<TtlEdit[]> {
  const rows = await query(z.object({ at: z.date(), before_ttl: z.number().nullable(), after_ttl: z.number() }), TTL_EDITS_SQL, [source], db);
  return rows.reverse().map((r) => ({ at: r.at, beforeTtlSeconds: r.before_ttl, afterTtlSeconds: r.after_ttl }));
}

const LateRow = z.object({
  event_id: z.string(),
  event_type: z.string().nullable(),
  first_claim_at: z.date(),
  late_claim_at: z.date(),
  late_at_text: z.string(),
  gap_seconds: z.number(),
  key_state: z.enum(["pruned", "unpruned"]),
  via_replay: z.boolean(),
  late_actor: z.string().nullable(),
});
type LateRow = z.output<typeof LateRow>;

const toExample = (r: LateRow): LateDuplicateExample => ({
  eventId: r.event_id,
  firstClaimAt: r.first_claim_at.toISOString(),
  lateClaimAt: r.late_claim_at.toISOString(),
  gapSeconds: r.gap_seconds,
});

const LATE_COLUMNS = `event_id, event_type, first_claim_at, late_claim_at,
  to_char(late_claim_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS late_at_text,
  gap_seconds, key_state, via_replay, late_actor`;

/** The advice for `name` over the window ending now (`window`: `adviceWindow` parsed, e.g. from `?window=30d`). */
export async function getAdvice(name: string, window: AdviceWindow, db?: Db): Promise<AdviceResponse> {
  const source = await getSource(name);
  const to = new Date();
  const from = new Date(to.getTime() - window.seconds * 1000);

  const { epochs, boundaries } = ttlEpochs(await ttlEdits(source.name, db), source.ttlSeconds);
  const [histogram, lateGroups, examples, basis, rates] = await Promise.all([
    duplicateAgeHistogram(source.name, from, to, db),
    // Grouped by the TTL epoch of the first claim (width_bucket over the edit times) and by replay.
    query(
      z.object({ epoch: z.number(), via_replay: z.boolean(), count: z.number(), max_gap: z.number() }),
      `SELECT width_bucket(first_claim_at, $4::timestamptz[]) AS epoch, via_replay, count(*)::int AS count, max(gap_seconds) AS max_gap
       FROM late_duplicates WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3
       GROUP BY 1, 2`,
      [source.name, from, to, boundaries],
      db,
    ),
    query(
      LateRow,
      `SELECT ${LATE_COLUMNS} FROM late_duplicates WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3
       ORDER BY gap_seconds DESC, late_claim_at DESC LIMIT ${EXAMPLES}`,
      [source.name, from, to],
      db,
    ),
    sizeBasis(db),
    claimRates(source.name, db),
  ]);
  const late = judgeLateDuplicates(
    lateGroups.map((g): LateGroup => ({ epoch: g.epoch, viaReplay: g.via_replay, count: g.count, maxGapSeconds: g.max_gap })),
    epochs,
  );
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
    late,
  });
  const claimRate = rates.get(source.name) ?? 0;
  return {
    source: source.name,
    window: window.text,
    observed: {
      ...advice.observed,
      histogram: histogram.counts.map((count, i) => ({ leSeconds: bucketEdge(i), count })),
      lateDuplicates: late.sender.count + late.replays.count,
      lateDuplicateExamples: examples.map(toExample),
      lateEvidence: {
        sender: late.sender.count,
        senderMaxGapSeconds: late.sender.maxGapSeconds,
        underCurrentTtl: late.underCurrentTtl.count,
        replays: late.replays.count,
        replaysMaxGapSeconds: late.replays.maxGapSeconds,
        byTtl: late.byTtl.map((e) => ({
          ttlSeconds: e.ttlSeconds,
          from: e.from?.toISOString() ?? null,
          until: e.until?.toISOString() ?? null,
          current: e.current,
          count: e.count,
          maxGapSeconds: e.maxGapSeconds,
        })),
      },
    },
    current: { ttlSeconds: source.ttlSeconds, parts },
    recommended: advice.recommended,
    reason: advice.reason,
    verdict: advice.verdict,
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
  db?: Db,
): Promise<LateDuplicatesPage> {
  const window = q.window;
  const source = name;
  const after = q.cursor ?? null;
  await getSource(source);
  const to = new Date();
  const from = new Date(to.getTime() - window.seconds * 1000);
  const { values, p } = sqlParams(source, from, to, q.limit + 1);
  const keyset = after ? `AND (late_claim_at, event_id) < (${p(after.at)}::timestamptz, ${p(after.eventId)})` : "";
  const [rows, days] = await Promise.all([
    query(
      LateRow,
      `SELECT ${LATE_COLUMNS} FROM late_duplicates
       WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3 ${keyset}
       ORDER BY late_claim_at DESC, event_id DESC LIMIT $4`,
      values,
      db,
    ),
    query(
      z.object({ day: z.string(), count: z.number(), via_replay: z.number() }),
      `SELECT to_char(date_trunc('day', late_claim_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, count(*)::int AS count,
              (count(*) FILTER (WHERE via_replay))::int AS via_replay
       FROM late_duplicates WHERE source = $1 AND late_claim_at >= $2 AND late_claim_at < $3
       GROUP BY 1 ORDER BY 1`,
      [source, from, to],
      db,
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
