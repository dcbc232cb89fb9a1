/**
 * From what the sampler can read cheaply to the figures it stores: rows and alive keys of the dedup
 * table. Pure, so the rules are unit-tested apart from the SQL.
 *
 * Exact when cheap: the sampler counts alive keys through the expires_at index up to ALIVE_COUNT_CAP
 * and the expiry backlog up to BACKLOG_CAP. When both counts stay under their caps they are the truth
 * (rows = alive + backlog). Beyond that the row count is the planner's figure: pg_class.reltuples
 * (from the last ANALYZE / autovacuum) scaled to the table's current size, summed over partitions, and
 * never below what was counted; alive keys are then rows − backlog.
 */
import { z } from "zod";

/** One leaf relation of dedup_keys (the table itself, or each partition if it is ever partitioned). */
export const LeafStats = z.object({
  /** pg_class.reltuples: rows at the last ANALYZE or VACUUM; -1 if never analyzed. */
  reltuples: z.number(),
  /** pg_class.relpages: pages at that time. */
  relpages: z.number(),
  /** Pages now (pg_relation_size ÷ block size). */
  pages: z.number(),
});
export type LeafStats = z.output<typeof LeafStats>;

/**
 * The planner's row estimate of one leaf (as PostgreSQL's estimate_rel_size does it): the analyzed
 * density (reltuples ÷ relpages) times the pages the table has now. null when there is no density to
 * scale: never analyzed, or analyzed while empty and grown since. An empty leaf has 0 rows either way.
 */
export function leafRowEstimate(leaf: LeafStats): number | null {
  if (leaf.pages === 0) return 0;
  if (leaf.reltuples < 0 || leaf.relpages === 0) return null;
  return Math.round((leaf.reltuples / leaf.relpages) * leaf.pages);
}

export type Counted = {
  /** count of expired keys, read with LIMIT backlogCap + 1. */
  backlog: number;
  backlogCap: number;
  /** count of alive keys, read with LIMIT aliveCap + 1. */
  alive: number;
  aliveCap: number;
};

export type TableFigures = {
  estimatedRows: number;
  aliveKeys: number;
  expiryBacklog: number;
  backlogCapped: boolean;
  /** True when estimatedRows and aliveKeys were counted, not estimated. */
  exact: boolean;
};

export function tableFigures(leaves: readonly LeafStats[], c: Counted): TableFigures {
  const backlogCapped = c.backlog > c.backlogCap;
  const expiryBacklog = Math.min(c.backlog, c.backlogCap);
  const aliveCounted = c.alive <= c.aliveCap;
  if (aliveCounted && !backlogCapped) {
    return { estimatedRows: c.alive + expiryBacklog, aliveKeys: c.alive, expiryBacklog, backlogCapped, exact: true };
  }
  // A leaf without a density (never analyzed yet) adds nothing here; the counted lower bound covers it
  // until autovacuum's first ANALYZE, which comes after a few dozen rows have been written.
  const planner = leaves.reduce((sum, leaf) => sum + (leafRowEstimate(leaf) ?? 0), 0);
  const countedAtLeast = Math.min(c.alive, c.aliveCap) + expiryBacklog;
  const estimatedRows = Math.max(planner, countedAtLeast);
  const aliveKeys = aliveCounted ? c.alive : Math.max(estimatedRows - expiryBacklog, c.aliveCap);
  return { estimatedRows, aliveKeys, expiryBacklog, backlogCapped, exact: false };
}
