/**
 * Reading and expiring duplicate_ages (written by the claim-outcome flush, see duplicate-ages.ts).
 *
 * Cost: a source's window is one range read on the (source, bucket) primary key, at most one row per
 * minute (129,600 for 90 days), summed in the database. Retention deletes at most DELETE_BATCH rows per
 * call, oldest first, through the bucket index.
 */
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { BUCKET_COUNT, DUPLICATE_AGES_KEPT_DAYS, type AgeHistogram } from "./duplicate-ages";
import type { Db } from "@/lib/db/transaction";

const DELETE_BATCH = 10_000;

const HistogramRow = z.object({ counts: z.array(z.union([z.number(), z.string()])).nullable(), max_age_seconds: z.number().nullable(), first_bucket: z.date().nullable() });
type HistogramRow = z.output<typeof HistogramRow>;

/** The source's duplicate ages summed over [from, to), and the first minute that holds any. */
export async function duplicateAgeHistogram(
  source: string,
  from: Date,
  to: Date,
  db?: Db,
): Promise<AgeHistogram & { firstAt: Date | null }> {
  const [row] = await query(
    HistogramRow,
    `SELECT (SELECT array_agg(total ORDER BY k) FROM (
               SELECT k, sum(c)::int8 AS total FROM duplicate_ages d, unnest(d.counts) WITH ORDINALITY AS u(c, k)
               WHERE d.source = $1 AND d.bucket >= $2 AND d.bucket < $3 GROUP BY k) s) AS counts,
            (SELECT max(max_age_seconds) FROM duplicate_ages WHERE source = $1 AND bucket >= $2 AND bucket < $3) AS max_age_seconds,
            (SELECT min(bucket) FROM duplicate_ages WHERE source = $1 AND bucket >= $2 AND bucket < $3) AS first_bucket`,
    [source, from, to],
    db,
  );
  const counts = new Array<number>(BUCKET_COUNT).fill(0);
  (row?.counts ?? []).forEach((c, i) => (counts[i] = Number(c)));
  return { counts, maxAgeSeconds: row?.max_age_seconds ?? 0, firstAt: row?.first_bucket ?? null };
}

/** Deletes rows older than DUPLICATE_AGES_KEPT_DAYS, oldest first, at most DELETE_BATCH; returns how many. */
export async function deleteOldDuplicateAges(db?: Db): Promise<number> {
  const rows = await query(
    z.object({ n: z.number() }),
    `WITH old AS (
       SELECT source, bucket FROM duplicate_ages WHERE bucket < now() - make_interval(days => $1) ORDER BY bucket LIMIT $2),
     del AS (DELETE FROM duplicate_ages d USING old WHERE d.source = old.source AND d.bucket = old.bucket RETURNING 1)
     SELECT count(*)::int AS n FROM del`,
    [DUPLICATE_AGES_KEPT_DAYS, DELETE_BATCH],
    db,
  );
  return rows[0].n;
}
