/**
 * The source page's pure side (no React, no recharts): the duplicate-age histogram as bars on an axis
 * where a duration (the TTL, the retry window) can be placed between bucket edges, the advice in the
 * words and figures the card shows, and the late duplicates per day as chart points. Unit-tested in
 * test/sources/advisor-view.unit.test.ts.
 */
import { humanDuration } from "@/lib/retention/advisor";
import type { AdviceResponse } from "@/lib/retention/advice-schema";
import type { SourceParts } from "@/lib/retention/presets";
import { formFromSource, type SourceFormState, type SourceLike } from "./source-form";

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
  /** The sender's late duplicates (events processed twice), judged against the TTL in force then, when any. */
  late: string | null;
  /** Late claims made by an operator's forced replay, shown apart (not evidence), when any. */
  replays: string | null;
  /** "TTL 7 d: 3 d + 1 d + 5 min + 2 d 23 h 55 min" */
  current: string;
  /** The server's one verdict (lib/retention/advisor.ts adviceVerdict): the badge and the text never disagree. */
  badge: string;
  verdict: string;
  /** Whether the recommendation changes the source (an Apply button makes sense). */
  changes: boolean;
  tone: "ok" | "warn" | "neutral";
};

const count = (n: number) => new Intl.NumberFormat("en-US").format(n);

export const partsLine = (p: SourceParts) =>
  [p.retryWindowSeconds, p.queueLagSeconds, p.clockSkewSeconds, p.replaySeconds].map((s) => humanDuration(s, true)).join(" + ");

const processedTwice = (n: number) => `${count(n)} event${n === 1 ? " was" : "s were"} processed twice`;

export function summarizeAdvice(a: AdviceResponse): AdviceSummary {
  const o = a.observed;
  const e = o.lateEvidence;
  const observed =
    o.duplicates === 0
      ? `No duplicate in the last ${a.window}`
      : `${count(o.duplicates)} duplicate${o.duplicates === 1 ? "" : "s"} in the last ${a.window}; 99.9% within ${humanDuration(o.ageP999Seconds ?? 0)}, the oldest ${humanDuration(o.maxAgeSeconds ?? 0)} after the first delivery`;
  const earlier = e.sender - e.underCurrentTtl;
  const late =
    e.sender === 0
      ? null
      : e.underCurrentTtl === e.sender
        ? `${processedTwice(e.sender)} under the current TTL: the key had expired when a later delivery came`
        : e.underCurrentTtl === 0
          ? `${processedTwice(e.sender)} under an earlier, shorter TTL: the key had expired when a later delivery came`
          : `${processedTwice(e.sender)}: ${count(e.underCurrentTtl)} under the current TTL, ${count(earlier)} under an earlier, shorter one`;
  const replays =
    e.replays === 0
      ? null
      : `${count(e.replays)} more ${e.replays === 1 ? "was" : "were"} processed again by an operator's forced replay: not a sender's retry, left out of the evidence`;
  const current = `TTL ${humanDuration(a.current.ttlSeconds, true)}: ${partsLine(a.current.parts)}`;
  return { observed, late, replays, current, badge: a.verdict.badge, verdict: a.verdict.text, changes: a.verdict.changes, tone: a.verdict.tone };
}

/** The edit form filled with the recommended parts ("apply" opens the ordinary edit with these). */
export function recommendedForm(source: SourceLike, parts: SourceParts): SourceFormState {
  return formFromSource({ ...source, ...parts, preset: null });
}

/** Late duplicates per UTC day as chart points (t: the day's start, ms). */
export function lateDayPoints(perDay: readonly { day: string; count: number; viaReplay: number }[]) {
  return perDay.map((d) => ({ t: Date.parse(`${d.day}T00:00:00Z`), late: d.count - d.viaReplay, viaReplay: d.viaReplay, total: d.count }));
}
