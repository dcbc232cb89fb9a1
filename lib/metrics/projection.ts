/**
 * The projected steady-state size of a source's keys: recent claim rate × TTL × bytes per key. Shared
 * by every place that shows it (a source's report, the edit preview, the TTL advisor), so a saved
 * source, a previewed one and a recommended one are measured alike.
 *
 * Bytes per key: the dedup table's size on disk over its rows, the rows as the sampler estimates them
 * (estimate.ts: pg_class.reltuples scaled to the table's current pages, summed over partitions), once
 * there are at least MIN_ROWS_TO_MEASURE; below that DEFAULT_BYTES_PER_KEY is assumed. Cost: catalog
 * reads only, and one claim_counts range read of the last hour.
 */
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { LeafStats, leafRowEstimate } from "./estimate";
import type { Db } from "@/lib/db/transaction";

/** Bytes per key assumed until the table holds enough keys to measure (heap tuple + two index entries). */
export const DEFAULT_BYTES_PER_KEY = 250;
export const MIN_ROWS_TO_MEASURE = 10_000;

export type SizeBasis = { bytesPerKey: number; bytesPerKeyMeasured: boolean };

/** Keys in steady state and their bytes for a claim rate (per second) and a TTL. Pure. */
export function projectSize(claimRate: number, ttlSeconds: number, bytesPerKey: number): { keys: number; bytes: number } {
  const keys = Math.round(claimRate * ttlSeconds);
  return { keys, bytes: keys * bytesPerKey };
}

/** Bytes per key from the table's size and its estimated rows. Pure. */
export function bytesPerKeyOf(totalBytes: number, leaves: readonly LeafStats[]): SizeBasis {
  const rows = leaves.reduce((n, l) => n + (leafRowEstimate(l) ?? Math.max(l.reltuples, 0)), 0);
  return rows >= MIN_ROWS_TO_MEASURE
    ? { bytesPerKey: Math.round(totalBytes / rows), bytesPerKeyMeasured: true }
    : { bytesPerKey: DEFAULT_BYTES_PER_KEY, bytesPerKeyMeasured: false };
}

export async function sizeBasis(db?: Db): Promise<SizeBasis> {
  // The table itself, or its leaf partitions in partition mode (pg_partition_tree lists nothing for a plain table).
  const leaves = await query(
    LeafStats.extend({ total_bytes: z.number() }),
    `SELECT pg_total_relation_size(c.oid) AS total_bytes, c.reltuples::float8 AS reltuples, c.relpages,
            (pg_relation_size(c.oid) / current_setting('block_size')::int8)::float8 AS pages
     FROM pg_class c
     WHERE c.oid IN (
       SELECT oid FROM pg_class WHERE oid = 'dedup_keys'::regclass AND relkind <> 'p'
       UNION ALL
       SELECT relid FROM pg_partition_tree('dedup_keys') WHERE isleaf AND relid <> 'dedup_keys'::regclass)`,
    [],
    db,
  );
  return bytesPerKeyOf(leaves.reduce((n, l) => n + Number(l.total_bytes), 0), leaves);
}

/** Claims per second over the last hour, by source (all sources, or only `source`). */
export async function claimRates(source?: string, db?: Db): Promise<Map<string, number>> {
  const rows = await query(
    z.object({ source: z.string(), claimed: z.number() }),
    `SELECT source, sum(claimed)::bigint AS claimed FROM claim_counts
     WHERE bucket >= now() - interval '1 hour' ${source ? "AND source = $1" : ""} GROUP BY source`,
    source ? [source] : [],
    db,
  );
  return new Map(rows.map((r) => [r.source, Number(r.claimed) / 3600]));
}
