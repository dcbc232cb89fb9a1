/**
 * Chart preparation for the Overview's metrics (no React, no recharts): samples laid on a regular time
 * grid with gaps kept as gaps, prune runs as points, axis ticks, and the units the charts speak.
 * Pure; the components in MetricsCharts.tsx only render what these return.
 */
import { formatCompact } from "@/components/ui/format";
import type { MetricSample, MetricsResponse, PruneRunPoint } from "@/lib/metrics/schema";

/** The grid gets no more slots than this, whatever a response claims (a guard, not a target). */
export const MAX_SLOTS = 5000;

type Numeric =
  | "tableBytes"
  | "indexBytes"
  | "estimatedRows"
  | "aliveKeys"
  | "expiryBacklog"
  | "inFlight"
  | "claims"
  | "duplicates"
  | "aliveKeysMin"
  | "aliveKeysMax"
  | "tableBytesMin"
  | "tableBytesMax";

/**
 * One slot of the grid. A slot no sample fell into has null values: recharts then breaks the line
 * there (connectNulls={false}) instead of drawing a dip to zero that never happened.
 */
export type SamplePoint = { t: number; backlogCapped: boolean | null } & Record<Numeric, number | null>;

/**
 * How samples that land in one slot are merged (the server already buckets long ranges the same way;
 * this only matters when a slot receives more than one): sizes and rows average, peaks are kept for
 * backlog and in-flight, counts of events add up, and a band's low and high stay the lowest and highest.
 */
const MERGE: Record<Numeric, "avg" | "min" | "max" | "sum"> = {
  tableBytes: "avg",
  indexBytes: "avg",
  estimatedRows: "avg",
  aliveKeys: "avg",
  expiryBacklog: "max",
  inFlight: "max",
  claims: "sum",
  duplicates: "sum",
  aliveKeysMin: "min",
  aliveKeysMax: "max",
  tableBytesMin: "min",
  tableBytesMax: "max",
};
const NUMERIC = Object.keys(MERGE) as Numeric[];

/** The start of the slot of `stepMs` that holds instant `t` (slots start on multiples since the epoch). */
export function slotOf(t: number, stepMs: number): number {
  return Math.floor(t / stepMs) * stepMs;
}

/** Every slot from `from` to `to`, each with its sample(s) or with nulls. */
export function sampleSeries(res: Pick<MetricsResponse, "from" | "to" | "step" | "samples">): SamplePoint[] {
  const stepMs = res.step * 1000;
  const first = slotOf(Date.parse(res.from), stepMs);
  const last = slotOf(Date.parse(res.to), stepMs);
  const slots = Math.min(MAX_SLOTS, Math.max(0, Math.floor((last - first) / stepMs) + 1));

  const groups: MetricSample[][] = Array.from({ length: slots }, () => []);
  for (const s of res.samples) {
    const i = Math.floor((Date.parse(s.at) - first) / stepMs);
    if (i >= 0 && i < slots) groups[i].push(s);
  }
  return groups.map((group, i) => toPoint(first + i * stepMs, group));
}

function toPoint(t: number, group: MetricSample[]): SamplePoint {
  const point = { t, backlogCapped: group.length ? group.some((s) => s.backlogCapped) : null } as SamplePoint;
  for (const key of NUMERIC) {
    if (group.length === 0) {
      point[key] = null;
      continue;
    }
    const values = group.map((s) => s[key]);
    const how = MERGE[key];
    point[key] =
      how === "max" ? Math.max(...values) : how === "min" ? Math.min(...values) : how === "sum" ? values.reduce((a, b) => a + b, 0) : Math.round(values.reduce((a, b) => a + b, 0) / values.length);
  }
  return point;
}

/** One bar per prune run (or per bucket of runs): rows deleted, and rows per second on the second axis. */
export type RunPoint = { t: number; rows: number; rowsPerSecond: number | null; batches: number; runs: number; stopped: string | null };

export function runSeries(runs: readonly PruneRunPoint[]): RunPoint[] {
  return runs
    .map((r) => ({ t: Date.parse(r.startedAt), rows: r.rows, rowsPerSecond: r.rowsPerSecond, batches: r.batches, runs: r.runs, stopped: r.stopped }))
    .sort((a, b) => a.t - b.t);
}

/** Whether a series has anything to draw. */
export function hasValues<P>(points: readonly P[], key: keyof P): boolean {
  return points.some((p) => p[key] !== null && p[key] !== undefined);
}

/** The newest non-null value of a series, or null. */
export function latestOf<P>(points: readonly P[], key: keyof P): number | null {
  for (let i = points.length - 1; i >= 0; i--) {
    const v = points[i][key];
    if (typeof v === "number") return v;
  }
  return null;
}

/** The largest value of a series, or null when it has none. */
export function peakOf<P>(points: readonly P[], key: keyof P): number | null {
  let peak: number | null = null;
  for (const p of points) {
    const v = p[key];
    if (typeof v === "number" && (peak === null || v > peak)) peak = v;
  }
  return peak;
}

/** Tick spacing per range: 10 min over an hour, 3 h over a day, a day over a week, 5 days over a month. */
function tickStepMs(rangeMs: number): number {
  const hour = 3600_000;
  if (rangeMs <= 2 * hour) return 10 * 60_000;
  if (rangeMs <= 36 * hour) return 3 * hour;
  if (rangeMs <= 8 * 24 * hour) return 24 * hour;
  return 5 * 24 * hour;
}

/**
 * Round-time ticks inside [from, to]: multiples of the tick spacing in local time, given the zone's
 * offset from UTC in minutes as Date#getTimezoneOffset reports it (a DST change inside the range shifts
 * later ticks by the hour, which an axis can live with).
 */
export function timeTicks(from: number, to: number, tzOffsetMinutes = new Date(from).getTimezoneOffset()): number[] {
  const step = tickStepMs(to - from);
  const shift = -tzOffsetMinutes * 60_000; // local = UTC + shift
  const ticks: number[] = [];
  for (let t = Math.ceil((from + shift) / step) * step - shift; t <= to; t += step) ticks.push(t);
  return ticks;
}

/** An axis label: the clock time for ranges up to a day and a half, the date for longer ones. */
export function formatAxisTime(t: number, rangeMs: number, timeZone?: string): string {
  if (rangeMs <= 36 * 3600_000) {
    return new Date(t).toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", timeZone });
  }
  return new Date(t).toLocaleDateString("en-GB", { day: "numeric", month: "short", timeZone });
}

/** A tooltip's time: "2 Dec, 14:05". */
export function formatPointTime(t: number, timeZone?: string): string {
  const d = new Date(t);
  const day = d.toLocaleDateString("en-GB", { day: "numeric", month: "short", timeZone });
  const time = d.toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", timeZone });
  return `${day}, ${time}`;
}

/**
 * Y-axis ticks for bytes from 0 to at least `max`: round numbers of one binary unit (0, 2, 4, 6, 8 GiB),
 * which recharts' decimal "nice" ticks are not (7.45 GiB, 5.59 GiB, …).
 */
export function byteTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1024];
  let unit = 1;
  while (max / unit >= 1024) unit *= 1024;
  const raw = max / unit / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)! * unit;
  const ticks = [0];
  while (ticks[ticks.length - 1] < max) ticks.push(ticks.length * step);
  return ticks;
}

/** Rows per second: "12.3k/s". */
export function formatRate(n: number): string {
  return `${formatCompact(n)}/s`;
}

/** A step as people say it: 60 → "1 min", 900 → "15 min", 3600 → "1 h", 86400 → "1 d". */
export function formatStep(seconds: number): string {
  if (seconds % 86400 === 0) return `${seconds / 86400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** The time axis every chart of one metrics answer shares: its domain, ticks and labels. */
export function timeAxes(res: Pick<MetricsResponse, "from" | "to"> & Partial<Pick<MetricsResponse, "annotations">>) {
  const from = Date.parse(res.from);
  const to = Date.parse(res.to);
  return {
    domain: [from, to] as [number, number],
    ticks: timeTicks(from, to),
    formatX: (t: number) => formatAxisTime(t, to - from),
    formatTime: (t: number) => formatPointTime(t),
    /** The range's configuration changes, marked on every time chart of it. */
    annotations: annotationMarks({ annotations: res.annotations ?? [] }),
  };
}

/** The range's configuration changes as chart marks (TimeSeriesChart's `annotations`). */
export function annotationMarks(res: Pick<MetricsResponse, "annotations">): { t: number; label: string }[] {
  return res.annotations.map((a) => ({ t: Date.parse(a.at), label: a.label }));
}

/** Claims (new keys) and duplicates over the points. */
export function claimTotals(points: readonly SamplePoint[]): { claims: number; duplicates: number } {
  return {
    claims: points.reduce((n, p) => n + (p.claims ?? 0), 0),
    duplicates: points.reduce((n, p) => n + (p.duplicates ?? 0), 0),
  };
}
