/**
 * How coarse a metrics history is: the smallest step of the ladder that keeps a range at or under
 * MAX_POINTS points (1 h: every minute; 24 h: 2 min; 7 d: 15 min; 30 d: 1 h). Pure.
 */

/** Points per series at most: ~720 keeps the answer small (tens of kB) and a chart still fine-grained. */
export const MAX_POINTS = 720;

const LADDER_MINUTES = [1, 2, 5, 10, 15, 30, 60, 120, 240, 360, 720, 1440];

/** Seconds per point for a range of `rangeSeconds`. */
export function stepFor(rangeSeconds: number): number {
  for (const minutes of LADDER_MINUTES) {
    if (rangeSeconds / (minutes * 60) <= MAX_POINTS) return minutes * 60;
  }
  return LADDER_MINUTES[LADDER_MINUTES.length - 1] * 60;
}
