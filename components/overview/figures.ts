/** Pure derivations for the overview display (no React): what the screen computes from the counts. */
import { formatClockTime, formatCount } from "@/components/ui/format";
import type { ClaimCounts, Overview } from "@/lib/overview/schema";

/** Every claim attempt of the window: deliveries that got a new key plus those that were turned away. */
export function attemptsOf(c: ClaimCounts): number {
  return c.claimed + c.duplicate + c.inFlight + c.payloadMismatch;
}

/** Deliveries turned away because another worker still held the key's lease or the payload differed. */
export function conflictsOf(c: ClaimCounts): number {
  return c.inFlight + c.payloadMismatch;
}

/** A headline figure as shown: the text, and a note saying when it is an estimate and from when. */
export type Figure = { text: string; note?: string };

/**
 * Alive keys: counted now when the table is small enough to count; otherwise the newest sample's
 * estimate (rows − backlog), marked "≈"; with neither, only that there are more than the count limit.
 */
export function aliveFigure(o: Overview): Figure {
  const counted = o.totals.keys.alive;
  if (counted !== null) return { text: formatCount(counted) };
  if (o.latestSample) return { text: `≈${formatCount(o.latestSample.aliveKeys)}`, note: `estimate at ${formatClockTime(o.latestSample.at, false)}` };
  return { text: `>${formatCount(o.countLimit)}`, note: "too many to count on every refresh" };
}

/** Expired keys: counted now up to the count limit; past it the newest sample's count, itself capped. */
export function expiredFigure(o: Overview): Figure {
  const counted = o.totals.keys.expired;
  if (counted !== null) return { text: formatCount(counted) };
  const s = o.latestSample;
  if (s && s.expiryBacklog > o.countLimit) {
    return { text: `${s.backlogCapped ? "≥" : "≈"}${formatCount(s.expiryBacklog)}`, note: `counted at ${formatClockTime(s.at, false)}` };
  }
  return { text: `>${formatCount(o.countLimit)}`, note: "too many to count on every refresh" };
}

/**
 * The expiry backlog "now", as the backlog chart's headline says it: the same figure as the "Expired, not
 * pruned" card (expiredFigure), or with a source filter that source's live count. undefined when the
 * source's count is not known live (a large table, or a source outside the busiest rows the overview sent):
 * the chart then shows its last sample.
 */
export function backlogNow(o: Overview, source: string | null): string | undefined {
  if (!source) return expiredFigure(o).text;
  const expired = o.sources.find((s) => s.source === source)?.keys.expired;
  return expired === null || expired === undefined ? undefined : formatCount(expired);
}
