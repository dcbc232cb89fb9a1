/**
 * How coarse a metrics history is: the smallest step of the ladder that keeps a range at or under
 * MAX_POINTS points (1 h: every minute; 24 h: 10 min; 7 d: 1 h; 30 d: 4 h), as Grafana picks an interval
 * per range. Pure.
 */

/**
 * Points per series at most: a chart ~900 px wide reads ~5 px per point; 720 two-minute points over a day
 * drew sawtooth noise (issue 23). The spread inside a bucket is kept as min/max bands (history.ts).
 */
export const MAX_POINTS = 180;

const LADDER_MINUTES = [1, 2, 5, 10, 15, 30, 60, 120, 240, 360, 720, 1440];

/** Seconds per point for a range of `rangeSeconds`. */
export function stepFor(rangeSeconds: number): number {
  for (const minutes of LADDER_MINUTES) {
    if (rangeSeconds / (minutes * 60) <= MAX_POINTS) return minutes * 60;
  }
  return LADDER_MINUTES[LADDER_MINUTES.length - 1] * 60;
}
