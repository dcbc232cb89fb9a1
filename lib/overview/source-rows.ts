/**
 * Which sources an overview read returns (no server code: the console imports the limit). Up to `limit`
 * matching sources, all of them, by name. Past it, the busiest first (claim attempts in the last hour,
 * then alive keys, then name), and `matching` says how many there are. `q` narrows them by name (any case)
 * before the limit applies. The totals are always those of every source; this only bounds the rows sent,
 * so a console polling every 10 s never downloads and redraws thousands of rows (measured in Chromium:
 * 5,000 sources took 3.9 s to show and held the main thread for 2 s at a time; the answer was 1.9 MB for
 * 6,100 sources).
 */
import type { ClaimCounts, SourceOverview as Row } from "./schema";

/** The rows the console asks for: its per-source table shows this many, then "Show all". */
export const SOURCE_ROWS_SHOWN = 50;

/** The most rows a caller may ask for by `limit` (without `limit`, every source is sent). */
export const MAX_SOURCE_ROWS = 1000;

export type SourceSelection = {
  rows: Row[];
  /** Sources matching `q` (every source without one). */
  matching: number;
};

const attempts = (c: ClaimCounts) => c.claimed + c.duplicate + c.inFlight + c.payloadMismatch;

const busiest = (a: Row, b: Row) =>
  attempts(b.lastHour) - attempts(a.lastHour) || (b.keys.alive ?? 0) - (a.keys.alive ?? 0) || (a.source < b.source ? -1 : a.source > b.source ? 1 : 0);

/** `sources` ordered by name (as the overview statement returns them); the input is not reordered. */
export function selectSources(sources: readonly Row[], { q = "", limit }: { q?: string; limit?: number } = {}): SourceSelection {
  const needle = q.trim().toLowerCase();
  const matching = needle ? sources.filter((s) => s.source.toLowerCase().includes(needle)) : [...sources];
  if (limit === undefined || matching.length <= limit) return { rows: matching, matching: matching.length };
  return { rows: matching.sort(busiest).slice(0, limit), matching: matching.length };
}
