/**
 * A source in the Sources screen's words: its four TTL parts and how they add up, its invariant checks
 * summed up, and its projected size. Pure; unit-tested in test/sources/source-form.unit.test.ts.
 */
import { formatBytes, formatCount } from "@/components/ui/format";
import type { Invariant } from "@/lib/retention/invariants";
import type { SourceParts } from "@/lib/retention/presets";
import type { SourceReport } from "@/lib/sources/sources";
import { formatDuration } from "@/lib/sources/duration";
import type { PartField } from "./source-form";

export type PartKey = keyof SourceParts;

/** The four parts in the order they add up, with the words the screen uses for each. */
export const PARTS: readonly { key: PartKey; field: PartField; label: string; hint: string }[] = [
  { key: "retryWindowSeconds", field: "retryWindow", label: "Retry window", hint: "the sender's longest retry window" },
  { key: "queueLagSeconds", field: "queueLag", label: "Queue lag", hint: "time an event may wait in your queue before its claim" },
  { key: "clockSkewSeconds", field: "clockSkew", label: "Clock skew", hint: "clock differences at the boundary" },
  { key: "replaySeconds", field: "replay", label: "Replay margin", hint: "deliberate replays of old events" },
];

/** "3d + 1d + 5m + 2d23h55m = 7d": how a TTL is made up. */
export function ttlEquation(parts: SourceParts): string {
  const sum = PARTS.reduce((n, p) => n + parts[p.key], 0);
  return `${PARTS.map((p) => formatDuration(parts[p.key])).join(" + ")} = ${formatDuration(sum)}`;
}

// ---------------------------------------------------------------------------------------------------
// Invariant checks

export type InvariantSummary = {
  failing: Invariant[];
  /** "All 3 checks pass", "1 warning", "2 warnings". */
  label: string;
};

export function summarizeInvariants(invariants: readonly Invariant[]): InvariantSummary {
  const failing = invariants.filter((i) => !i.ok);
  if (failing.length === 0) {
    return { failing, label: invariants.length === 1 ? "The check passes" : `All ${invariants.length} checks pass` };
  }
  return { failing, label: `${failing.length} warning${failing.length === 1 ? "" : "s"}` };
}

/** What each check looks at, in a few words (the ids come from lib/retention/invariants.ts). */
const INVARIANT_TITLES: Record<string, string> = {
  ttl_floor: "TTL floor",
  margins: "Margins",
  audit_outlives_keys: "Audit history",
  dead_letters_within_keys: "Dead letters",
};

export function invariantTitle(id: string): string {
  return INVARIANT_TITLES[id] ?? id.replace(/_/g, " ");
}

/** Above the list: "3 sources, 1 with warnings" (or "…, all checks pass"). */
export function sourcesSummary(sources: readonly { invariants: readonly Invariant[] }[]): string {
  const flagged = sources.filter((s) => s.invariants.some((i) => !i.ok)).length;
  const n = `${sources.length} source${sources.length === 1 ? "" : "s"}`;
  return flagged === 0 ? `${n}, all checks pass` : `${n}, ${flagged} with warnings`;
}

// ---------------------------------------------------------------------------------------------------
// Projection

/** The steady-state projection the server sends with each source. */
export type Projection = SourceReport["projection"];

/** Claims per second in words that stay readable at low rates: "0.0028/s (10/h)". */
export function formatClaimRate(perSecond: number): string {
  if (perSecond === 0) return "0/s";
  const perHour = perSecond * 3600;
  if (perSecond >= 1) return `${perSecond.toFixed(perSecond >= 100 ? 0 : 1)}/s`;
  return `${perSecond.toPrecision(2)}/s (${Math.round(perHour)}/h)`;
}

/**
 * The steady-state size as a sentence's parts: the result, and how it is reached (recent claim rate ×
 * TTL × bytes per key), saying whether bytes per key were measured on this database or assumed.
 */
export function describeProjection(p: Projection, ttlSeconds: number): { result: string; formula: string; basis: string } {
  return {
    result: `≈ ${formatCount(p.keys)} key${p.keys === 1 ? "" : "s"}, ${formatBytes(p.bytes)}`,
    formula: `${formatClaimRate(p.claimRate)} × ${formatDuration(ttlSeconds)} × ${p.bytesPerKey} B/key`,
    basis: p.bytesPerKeyMeasured
      ? "bytes per key measured on this database"
      : "bytes per key assumed (measured once the key table holds enough keys)",
  };
}
