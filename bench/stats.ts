/**
 * Pure statistics for the benchmark: percentiles, medians, and the ratios of each slice to the raw
 * baseline slices around it. No I/O, so the arithmetic behind every published figure can be read on its own.
 */

/** Nearest-rank percentile of an ascending array (p in 0..100); NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

/** One slice: one scenario driven for a short, fixed time. */
export type RoundSample = {
  /** Requests (statements, library calls, HTTP requests) completed. */
  ops: number;
  /** Requests per second: the sum over clients of each client's requests ÷ the time it was busy. */
  opsPerSec: number;
  /** Events claimed per request (the batch size). */
  eventsPerOp: number;
  latenciesMs: number[];
};

/** A scenario's slice together with the baseline's rate measured right before and right after it. */
export type Paired = { sample: RoundSample; baselineEventsPerSec: number };

export type CellSummary = {
  /** Median over slices of events per second. */
  eventsPerSec: number;
  /** Median over slices of requests per second. */
  opsPerSec: number;
  /**
   * This scenario's events/s ÷ the baseline's events/s around it, per slice: the median, and the middle
   * half of the slices (25th–75th percentile) as a measure of how noisy the machine was.
   */
  ratio: { median: number; q1: number; q3: number };
  /** Per-request latency percentiles over every request of every slice (ms). */
  p50: number;
  p99: number;
  /** Latency percentiles ÷ the baseline's (above 1 = slower than the baseline). */
  p50Ratio: number;
  p99Ratio: number;
  slices: number;
  requests: number;
};

export const eventsPerSec = (s: RoundSample) => s.opsPerSec * s.eventsPerOp;

/**
 * Summarises a scenario against the baseline of its block. Each ratio is taken between a slice and the
 * baseline slices on either side of it (the three ran within about a second on the same machine), and
 * only then is the median taken: a burst of load from elsewhere moves both sides of a ratio together,
 * and the bursts that do not are outvoted.
 */
export function summarise(cell: readonly Paired[], baseline: readonly RoundSample[]): CellSummary {
  if (cell.length === 0 || baseline.length === 0) throw new Error("summarise: no samples");
  const ratios = cell.map((p) => eventsPerSec(p.sample) / p.baselineEventsPerSec).sort((a, b) => a - b);
  const samples = cell.map((p) => p.sample);
  const lat = pooledSorted(samples);
  const baseLat = pooledSorted(baseline);
  const p50 = percentile(lat, 50);
  const p99 = percentile(lat, 99);
  return {
    eventsPerSec: median(samples.map(eventsPerSec)),
    opsPerSec: median(samples.map((s) => s.opsPerSec)),
    ratio: { median: percentile(ratios, 50), q1: percentile(ratios, 25), q3: percentile(ratios, 75) },
    p50,
    p99,
    p50Ratio: p50 / percentile(baseLat, 50),
    p99Ratio: p99 / percentile(baseLat, 99),
    slices: cell.length,
    requests: lat.length,
  };
}

function pooledSorted(samples: readonly RoundSample[]): number[] {
  const all: number[] = [];
  for (const s of samples) for (const v of s.latenciesMs) all.push(v);
  return all.sort((a, b) => a - b);
}

/** Rotates `items` left by `by`: cycle c starts with a different scenario, so none always runs first. */
export function rotate<T>(items: readonly T[], by: number): T[] {
  const n = items.length;
  if (n === 0) return [];
  const k = ((by % n) + n) % n;
  return [...items.slice(k), ...items.slice(0, k)];
}
