/**
 * The TTL advisor's rules (issue 14 §3): from what a source's traffic showed (its duplicate-age
 * histogram and its late duplicates) to a recommended set of parts, with the reasons in plain sentences.
 * Pure; unit-tested in test/retention/advisor.db.test.ts. The I/O around it is advice.ts.
 *
 * The rules, in order:
 * 1. Evidence. With no late duplicate, the 99.9th percentile of duplicate ages needs at least
 *    MIN_DUPLICATES duplicates; with fewer, there is no recommendation, and the reason says how many more
 *    are needed. A late duplicate from the sender's own retries is evidence on its own (the TTL in force
 *    at its first claim was too short for it). Late claims made by an operator's replay are not evidence
 *    of the sender's retries: they are reported apart and change nothing (evidence.ts).
 * 2. Cover the observed tail: the retry window becomes the larger of the declared one and what the
 *    traffic showed — the upper bound of the p99.9 duplicate age and every late-duplicate gap — rounded
 *    up. It is never lowered below the declared window: the design anchors the TTL to the sender's
 *    longest documented window, not the typical one.
 * 3. Keep the source's own margins (queue lag, clock skew, replay), raised only where the invariants
 *    require it (lib/retention/invariants.ts): no zero margin, and clock skew + replay at least the
 *    dead-letter retention.
 * 4. Never below the design's floor for the retry window (presets.ts ttlFloorFor): any shortfall is added
 *    to the replay margin, the design's slack for backlogs and replays.
 * 5. At most MAX_TTL_SECONDS (90 d): past it there is no recommendation, and the reason says why.
 * The verdict (adviceVerdict) is one function of the outcome: the card's badge and its text, the API's
 * `verdict` and the CLI all read it, so they never disagree.
 */
import { formatDuration } from "@/lib/sources/duration";
import { MAX_TTL_SECONDS } from "@/lib/sources/schema";
import { checkInvariants } from "./invariants";
import { ttlFloorFor, ttlOfParts, type SourceParts } from "./presets";
import { AGE_BUCKETS, quantileUpperBound, totalOf, type AgeHistogram } from "@/lib/metrics/duplicate-ages";
import type { LateEvidence } from "./evidence";

/** Duplicates needed before the 99.9th percentile of their ages means anything (one in a thousand). */
export const MIN_DUPLICATES = 1000;

/** What a zero margin becomes (the invariants refuse a zero margin). */
export const MIN_MARGINS = { queueLagSeconds: 3600, clockSkewSeconds: 300, replaySeconds: 86400 } as const;

export type AdvisorInput = {
  parts: SourceParts;
  deadLetterRetentionSeconds: number | null;
  auditRetentionSeconds: number;
  windowSeconds: number;
  histogram: AgeHistogram;
  /** The window's late duplicates, judged: the sender's by the TTL in force then, replays apart (evidence.ts). */
  late: LateEvidence;
};

export type Recommendation = { ttlSeconds: number; parts: SourceParts; reasons: string[] };

/**
 * The advice in one verdict: `tone` ok (the TTL fits: nothing to do), warn (a change is recommended, or the
 * traffic outruns the longest TTL), neutral (not enough evidence yet); `badge` and `text` say the same.
 */
export type AdviceVerdict = { tone: "ok" | "warn" | "neutral"; badge: string; text: string; changes: boolean };

export type Advice = {
  observed: { duplicates: number; ageP50Seconds: number | null; ageP99Seconds: number | null; ageP999Seconds: number | null; maxAgeSeconds: number | null };
  recommended: Recommendation | null;
  /** Why there is no recommendation (too little evidence, or past the longest TTL); null when there is one. */
  reason: string | null;
  verdict: AdviceVerdict;
};

const H = 3600;
const D = 86400;

/**
 * A duration in words for sentences: "3 d 2 h", "45 min", "12 s" — the two largest units (an observed
 * age, rounded down), or every unit with `exact` (a configured part: "5 d 18 h 55 min").
 */
export function humanDuration(seconds: number, exact = false): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const parts: string[] = [];
  let rest = s;
  for (const [unit, size] of [["d", D], ["h", H], ["min", 60], ["s", 1]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) parts.push(`${n} ${unit}`);
    rest -= n * size;
    if (parts.length === 2 && !exact) break;
  }
  return parts.join(" ");
}

const exactly = (seconds: number) => humanDuration(seconds, true);

/** Rounds a window up to a figure people type: whole minutes up to an hour, hours up to 2 days, then 6 hours. */
export function roundUpWindow(seconds: number): number {
  const unit = seconds <= H ? 60 : seconds <= 2 * D ? H : 6 * H;
  return Math.max(unit, Math.ceil(seconds / unit) * unit);
}

const plural = (n: number, one: string, many = `${one}s`) => `${new Intl.NumberFormat("en-US").format(n)} ${n === 1 ? one : many}`;

/** Duplicates certainly older than `seconds`: those in buckets whose lower edge is at or past it. */
export function duplicatesBeyond(h: AgeHistogram, seconds: number): number {
  let n = 0;
  for (let i = 0; i < h.counts.length; i++) {
    const lower = i === 0 ? 0 : AGE_BUCKETS[i - 1];
    if (lower >= seconds) n += h.counts[i];
  }
  return n;
}

export function advise(input: AdvisorInput): Advice {
  const h = input.histogram;
  const duplicates = totalOf(h);
  const observed = {
    duplicates,
    ageP50Seconds: quantileUpperBound(h, 0.5),
    ageP99Seconds: quantileUpperBound(h, 0.99),
    ageP999Seconds: quantileUpperBound(h, 0.999),
    maxAgeSeconds: duplicates > 0 ? h.maxAgeSeconds : null,
  };
  const window = humanDuration(input.windowSeconds);

  const cur = input.parts;
  const late = input.late;
  const replayNote =
    late.replays.count > 0
      ? `${plural(late.replays.count, "event was", "events were")} processed again by an operator's forced replay (up to ${humanDuration(late.replays.maxGapSeconds ?? 0)} after the first claim): ` +
        `an operator's decision, not a sender's retry, so ${late.replays.count === 1 ? "it is" : "they are"} left out of the evidence.`
      : null;

  // 1. Evidence.
  if (late.sender.count === 0 && duplicates < MIN_DUPLICATES) {
    const reason =
      `Too little evidence: ${plural(duplicates, "duplicate")} and no late duplicate from the sender in the last ${window}. ` +
      `At least ${plural(MIN_DUPLICATES, "duplicate")} are needed to estimate the 99.9th percentile of duplicate ages ` +
      `(${plural(MIN_DUPLICATES - duplicates, "more duplicate")}); a longer window may have them.` +
      (replayNote ? ` ${replayNote}` : "");
    return { observed, recommended: null, reason, verdict: adviceVerdict(null, reason, cur, late) };
  }

  const reasons: string[] = [];

  // 2. The observed tail.
  const p999 = duplicates >= MIN_DUPLICATES ? observed.ageP999Seconds ?? 0 : 0;
  const lateGap = late.sender.maxGapSeconds ?? 0;
  const cover = Math.max(p999, lateGap);
  const observedWindow = cover > 0 ? roundUpWindow(cover) : 0;
  const retry = Math.max(cur.retryWindowSeconds, observedWindow);
  const declared = humanDuration(cur.retryWindowSeconds);

  for (const epoch of late.byTtl) {
    // Judged against the TTL in force at the first claims: an earlier TTL's misses are not the current one's.
    const under = epoch.current
      ? `under the current TTL of ${exactly(epoch.ttlSeconds)}`
      : `under the earlier TTL of ${exactly(epoch.ttlSeconds)} (in force until ${epoch.until!.toISOString().slice(0, 16).replace("T", " ")} UTC)`;
    reasons.push(
      `${plural(epoch.count, "event was", "events were")} processed twice in the last ${window} ${under}: the key had expired when a later delivery came, ` +
        `up to ${humanDuration(epoch.maxGapSeconds)} after the first claim.`,
    );
  }
  if (replayNote) reasons.push(replayNote);
  if (duplicates > 0) {
    const beyond = duplicatesBeyond(h, cur.retryWindowSeconds);
    if (h.maxAgeSeconds > cur.retryWindowSeconds) {
      reasons.push(
        beyond > 0
          ? `${plural(beyond, "duplicate")} arrived more than ${declared} after the first delivery (the oldest ${humanDuration(h.maxAgeSeconds)}), beyond your ${declared} retry window.`
          : `The oldest duplicate arrived ${humanDuration(h.maxAgeSeconds)} after the first delivery, beyond your ${declared} retry window.`,
      );
    }
    if (duplicates >= MIN_DUPLICATES) {
      reasons.push(
        `99.9% of the ${plural(duplicates, "duplicate")} of the last ${window} arrived within ${humanDuration(p999)} of the first delivery.`,
      );
    } else {
      reasons.push(`Only ${plural(duplicates, "duplicate")} in the last ${window}: the recommendation rests on the late duplicates.`);
    }
  }
  if (retry > cur.retryWindowSeconds) {
    reasons.push(`A retry window of ${exactly(retry)} covers ${late.sender.count > 0 && lateGap >= p999 ? "every late duplicate" : "that tail"}.`);
  } else {
    reasons.push(`Your ${declared} retry window already covers what arrived; it stays (the design anchors it to the sender's longest documented window).`);
  }

  // 3. Margins the invariants require.
  const parts: SourceParts = { retryWindowSeconds: retry, queueLagSeconds: cur.queueLagSeconds, clockSkewSeconds: cur.clockSkewSeconds, replaySeconds: cur.replaySeconds };
  const names = { queueLagSeconds: "queue-lag", clockSkewSeconds: "clock-skew", replaySeconds: "replay" } as const;
  for (const k of ["queueLagSeconds", "clockSkewSeconds", "replaySeconds"] as const) {
    if (parts[k] === 0) {
      parts[k] = MIN_MARGINS[k];
      reasons.push(`Your ${names[k]} margin is zero, which the checks refuse: it becomes ${exactly(MIN_MARGINS[k])}.`);
    }
  }
  const dl = input.deadLetterRetentionSeconds;
  if (dl !== null && parts.clockSkewSeconds + parts.replaySeconds < dl) {
    const need = dl - parts.clockSkewSeconds;
    reasons.push(
      `Dead letters are kept ${exactly(dl)}: the replay margin rises to ${exactly(need)} so a letter replayed at the end of its retention still meets a live key.`,
    );
    parts.replaySeconds = need;
  }

  // 4. The design's floor for the retry window.
  const floor = ttlFloorFor(parts.retryWindowSeconds);
  const sum = ttlOfParts(parts);
  if (sum < floor) {
    parts.replaySeconds += floor - sum;
    reasons.push(
      `The design's floor for a ${exactly(parts.retryWindowSeconds)} retry window is ${exactly(floor)}: the replay margin rises by ${exactly(floor - sum)} to reach it.`,
    );
  }
  const ttl = ttlOfParts(parts);

  // 5. The longest TTL.
  if (ttl > MAX_TTL_SECONDS) {
    const reason =
      `Covering what arrived needs a TTL of ${humanDuration(ttl)} with your margins, beyond the longest TTL Keyward allows (${humanDuration(MAX_TTL_SECONDS)}). ` +
      `Deliveries this late are better caught by the audit history ("did we process it?") than by a dedup key.`;
    return { observed, recommended: null, reason, verdict: adviceVerdict(null, reason, cur, late) };
  }

  const curTtl = ttlOfParts(cur);
  reasons.push(
    ttl === curTtl && retry === cur.retryWindowSeconds
      ? `With your margins (queue lag ${exactly(parts.queueLagSeconds)}, clock skew ${exactly(parts.clockSkewSeconds)}, replay ${exactly(parts.replaySeconds)}) the TTL stays ${exactly(ttl)}: no change needed.`
      : `With your margins (queue lag ${exactly(parts.queueLagSeconds)}, clock skew ${exactly(parts.clockSkewSeconds)}, replay ${exactly(parts.replaySeconds)}) the TTL becomes ${exactly(ttl)} (now ${exactly(curTtl)}).`,
  );
  if (input.auditRetentionSeconds < ttl) {
    reasons.push(
      `The audit history is kept ${humanDuration(input.auditRetentionSeconds)}, less than this TTL: raise KEYWARD_AUDIT_RETENTION_DAYS too.`,
    );
  }
  // The recommendation must pass the same checks a saved source does (audit retention is a setting, not a part).
  const failing = checkInvariants({ ...parts, ttlSeconds: ttl, deadLetterRetentionSeconds: dl, auditRetentionSeconds: Math.max(input.auditRetentionSeconds, ttl) }).filter((i) => !i.ok);
  if (failing.length) throw new Error(`advisor produced parts that fail checks: ${failing.map((i) => i.id).join(", ")}`);
  const recommended = { ttlSeconds: ttl, parts, reasons };
  return { observed, recommended, reason: null, verdict: adviceVerdict(recommended, null, cur, late) };
}

const sameParts = (a: SourceParts, b: SourceParts) =>
  a.retryWindowSeconds === b.retryWindowSeconds && a.queueLagSeconds === b.queueLagSeconds && a.clockSkewSeconds === b.clockSkewSeconds && a.replaySeconds === b.replaySeconds;

/** The parts in words for a verdict: "3 d + 1 d + 5 min + 2 d 23 h 55 min". */
const partsWords = (p: SourceParts) => [p.retryWindowSeconds, p.queueLagSeconds, p.clockSkewSeconds, p.replaySeconds].map((s) => exactly(s)).join(" + ");

/**
 * The one verdict on an advice (the card's badge and text, the API's `verdict`, the CLI). A change is
 * recommended: warn. No change needed: ok, and the text says so, naming the late duplicates of an
 * earlier TTL as such (they are not the current TTL's). No recommendation: warn when the traffic outruns
 * the longest TTL, neutral when there is too little evidence.
 */
export function adviceVerdict(recommended: Recommendation | null, reason: string | null, current: SourceParts, late: LateEvidence): AdviceVerdict {
  if (!recommended) {
    const tooLittle = late.sender.count === 0;
    return tooLittle
      ? { tone: "neutral", badge: "Not enough evidence yet", text: reason ?? "No recommendation.", changes: false }
      : { tone: "warn", badge: "Worth a look", text: reason ?? "No recommendation.", changes: false };
  }
  if (!sameParts(recommended.parts, current)) {
    return {
      tone: "warn",
      badge: "Change recommended",
      text: `Recommended: TTL ${exactly(recommended.ttlSeconds)} (${partsWords(recommended.parts)})`,
      changes: true,
    };
  }
  const earlier = late.byTtl.filter((e) => !e.current).reduce((n, e) => n + e.count, 0);
  const note = earlier > 0 ? ` (the ${plural(earlier, "late duplicate")} came under an earlier, shorter TTL)` : "";
  return { tone: "ok", badge: "TTL fits the traffic", text: `The current TTL covers what arrived: no change needed${note}`, changes: false };
}

/** "3d + 1d + 5m + 2d23h55m": the parts as the CLI and the form type them. */
export const partsText = (p: SourceParts) =>
  [p.retryWindowSeconds, p.queueLagSeconds, p.clockSkewSeconds, p.replaySeconds].map(formatDuration).join(" + ");
