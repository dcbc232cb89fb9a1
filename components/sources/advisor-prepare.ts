/**
 * The source page's pure side (no React, no recharts): the duplicate-age histogram as bars on an axis
 * where a duration (the TTL, the retry window) can be placed between bucket edges, the advice in the
 * words and figures the card shows, and the late duplicates per day as chart points. Unit-tested in
 * test/sources/advisor-prepare.test.ts.
 */
import { humanDuration } from "@/lib/retention/advisor";
import type { AdviceResponse } from "@/lib/retention/advice-schema";
import type { SourceParts } from "@/lib/retention/presets";
import { formFromSource, type SourceFormState, type SourceLike } from "./prepare";

/** The windows the page offers (the API takes any from 1h to 90d). */
export const ADVICE_WINDOWS = ["7d", "30d", "90d"] as const;
export type AdviceWindow = (typeof ADVICE_WINDOWS)[number];
export const DEFAULT_ADVICE_WINDOW: AdviceWindow = "30d";

export type HistogramBar = { x: number; label: string; range: string; count: number };

/** One bar per bucket, at x = its index, labelled by its upper edge ("≤ 1 min", last "> 90 d"). */
export function histogramBars(histogram: AdviceResponse["observed"]["histogram"]): HistogramBar[] {
  return histogram.map((b, i) => {
    const lower = i === 0 ? null : histogram[i - 1].leSeconds;
    const label = b.leSeconds === null ? `> ${humanDuration(lower ?? 0)}` : `≤ ${humanDuration(b.leSeconds)}`;
    const range =
      b.leSeconds === null
        ? `older than ${humanDuration(lower ?? 0)}`
        : lower === null
          ? `within ${humanDuration(b.leSeconds)}`
          : `${humanDuration(lower)} to ${humanDuration(b.leSeconds)}`;
    return { x: i, label, range, count: b.count };
  });
}

/**
 * Where a duration sits on the bars' axis: bar i spans [i − ½, i + ½] and covers (edge i−1, edge i];
 * inside it the position is logarithmic between the edges, so an age equal to a bucket's upper edge is
 * that bar's right border. Past the last edge: the last bar's middle.
 */
export function agePosition(seconds: number, histogram: AdviceResponse["observed"]["histogram"]): number {
  const edges = histogram.map((b) => b.leSeconds);
  for (let i = 0; i < edges.length; i++) {
    const hi = edges[i];
    if (hi === null) return i;
    if (seconds <= hi) {
      const lo = i === 0 ? null : (edges[i - 1] as number);
      if (lo === null || seconds <= 0) return i - 0.5 + (i === 0 ? Math.min(1, Math.max(0, seconds / hi)) : 0);
      return i - 0.5 + (Math.log(seconds) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
    }
  }
  return edges.length - 1;
}

export type AdviceSummary = {
  /** "1,234 duplicates, 99.9% within 3 d" or "No duplicate yet". */
  observed: string;
  /** Events processed twice, when any. */
  late: string | null;
  /** "TTL 7 d: 3 d + 1 d + 5 min + 2 d 23 h 55 min" */
  current: string;
  /** The recommendation in one line, or why there is none. */
  verdict: string;
  /** Whether the recommendation changes the source (an Apply button makes sense). */
  changes: boolean;
  tone: "ok" | "warn" | "neutral";
};

const count = (n: number) => new Intl.NumberFormat("en-US").format(n);

export const partsLine = (p: SourceParts) =>
  [p.retryWindowSeconds, p.queueLagSeconds, p.clockSkewSeconds, p.replaySeconds].map((s) => humanDuration(s, true)).join(" + ");

const sameParts = (a: SourceParts, b: SourceParts) =>
  a.retryWindowSeconds === b.retryWindowSeconds && a.queueLagSeconds === b.queueLagSeconds && a.clockSkewSeconds === b.clockSkewSeconds && a.replaySeconds === b.replaySeconds;

export function summarizeAdvice(a: AdviceResponse): AdviceSummary {
  const o = a.observed;
  const observed =
    o.duplicates === 0
      ? `No duplicate in the last ${a.window}`
      : `${count(o.duplicates)} duplicate${o.duplicates === 1 ? "" : "s"} in the last ${a.window}; 99.9% within ${humanDuration(o.ageP999Seconds ?? 0)}, the oldest ${humanDuration(o.maxAgeSeconds ?? 0)} after the first delivery`;
  const late =
    o.lateDuplicates > 0
      ? `${count(o.lateDuplicates)} event${o.lateDuplicates === 1 ? " was" : "s were"} processed twice: the key had expired when a later delivery came`
      : null;
  const current = `TTL ${humanDuration(a.current.ttlSeconds, true)}: ${partsLine(a.current.parts)}`;
  if (!a.recommended) return { observed, late, current, verdict: a.reason ?? "No recommendation.", changes: false, tone: late ? "warn" : "neutral" };
  const changes = !sameParts(a.recommended.parts, a.current.parts);
  return {
    observed,
    late,
    current,
    verdict: changes
      ? `Recommended: TTL ${humanDuration(a.recommended.ttlSeconds, true)} (${partsLine(a.recommended.parts)})`
      : `The current TTL covers what arrived: no change needed`,
    changes,
    tone: changes || late ? "warn" : "ok",
  };
}

/** The edit form filled with the recommended parts ("apply" opens the ordinary edit with these). */
export function recommendedForm(source: SourceLike, parts: SourceParts): SourceFormState {
  return formFromSource({ ...source, ...parts, preset: null });
}

/** Late duplicates per UTC day as chart points (t: the day's start, ms). */
export function lateDayPoints(perDay: readonly { day: string; count: number; viaReplay: number }[]) {
  return perDay.map((d) => ({ t: Date.parse(`${d.day}T00:00:00Z`), late: d.count - d.viaReplay, viaReplay: d.viaReplay, total: d.count }));
}
