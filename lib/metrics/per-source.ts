/**
 * Per-source key counts for a metrics sample (the source filter of the Overview's charts and each
 * source's page): alive keys, expiry backlog and keys in flight per source, bounded whatever the table's
 * size.
 *
 * - A table of at most PER_SOURCE_EXACT_LIMIT rows is counted exactly, in one grouped pass (the
 *   Overview's live table does the same every 10 s under the same limit).
 * - A larger one is sampled: TABLESAMPLE SYSTEM reads about PER_SOURCE_SAMPLE_ROWS rows' worth of
 *   random pages (never the whole table), and each source gets its share of the sample's alive and
 *   expired rows applied to the sample's own totals (scalePerSource), so the sources add up to the
 *   totals the sample records. Such figures are marked `keysEstimated`.
 * - In flight comes from the partial index of leased keys, grouped by source (exact).
 */
import { z } from "zod";
import { query } from "@/lib/db/sql";
import type { Db } from "@/lib/db/transaction";

export const PER_SOURCE_EXACT_LIMIT = 100_000;
export const PER_SOURCE_SAMPLE_ROWS = 100_000;

export type SourceKeys = { aliveKeys: number; expiryBacklog: number; inFlight: number; keysEstimated: boolean };

const Counted = z.object({ source: z.string(), alive: z.number(), expired: z.number() });
type Counted = z.output<typeof Counted>;

/**
 * The sampled counts scaled to the totals: each source's share of the sample's alive (expired) rows
 * times the table's alive keys (backlog). Pure.
 */
export function scalePerSource(sampled: readonly Counted[], totals: { aliveKeys: number; expiryBacklog: number }): Map<string, { aliveKeys: number; expiryBacklog: number }> {
  const alive = sampled.reduce((n, r) => n + r.alive, 0);
  const expired = sampled.reduce((n, r) => n + r.expired, 0);
  const out = new Map<string, { aliveKeys: number; expiryBacklog: number }>();
  for (const r of sampled) {
    out.set(r.source, {
      aliveKeys: alive > 0 ? Math.round((totals.aliveKeys * r.alive) / alive) : 0,
      expiryBacklog: expired > 0 ? Math.round((totals.expiryBacklog * r.expired) / expired) : 0,
    });
  }
  return out;
}

/** Key counts of every source that has keys (see the header for how they are bounded). */
export async function measureSourceKeys(
  db: Db,
  totals: { estimatedRows: number; aliveKeys: number; expiryBacklog: number; exact: boolean },
): Promise<Map<string, SourceKeys>> {
  const exact = totals.exact && totals.estimatedRows <= PER_SOURCE_EXACT_LIMIT;
  const percent = exact ? 100 : Math.min(100, (100 * PER_SOURCE_SAMPLE_ROWS) / Math.max(1, totals.estimatedRows));
  const counted = await query(
    Counted,
    `SELECT source, count(*) FILTER (WHERE expires_at > now())::int8 AS alive, count(*) FILTER (WHERE expires_at <= now())::int8 AS expired
     FROM dedup_keys ${exact ? "" : `TABLESAMPLE SYSTEM (${percent.toFixed(6)})`}
     GROUP BY source`,
    [],
    db,
  );
  const leased = await query(
    z.object({ source: z.string(), n: z.number() }),
    "SELECT source, count(*)::int8 AS n FROM dedup_keys WHERE status = 'processing' AND expires_at > now() GROUP BY source",
    [],
    db,
  );
  const scaled = exact
    ? new Map(counted.map((r) => [r.source, { aliveKeys: r.alive, expiryBacklog: r.expired }]))
    : scalePerSource(counted, totals);
  const out = new Map<string, SourceKeys>();
  for (const [source, k] of scaled) out.set(source, { ...k, inFlight: 0, keysEstimated: !exact });
  for (const { source, n } of leased) {
    const cur = out.get(source) ?? { aliveKeys: 0, expiryBacklog: 0, inFlight: 0, keysEstimated: !exact };
    cur.inFlight = n;
    out.set(source, cur);
  }
  return out;
}
