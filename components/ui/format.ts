/**
 * Display formatting shared by console screens: one format per quantity, so a count, a size or a time
 * reads the same on every screen. Pure; fixed locale so output does not vary by machine. Durations are
 * written by lib/sources/duration.ts `formatDuration` (shared with the CLI and the server's messages).
 */

export { formatBytes, formatClockTime, formatDateTime, formatRelative, isInstant, sig3 } from "@/lib/format";
import { sig3 } from "@/lib/format";

const counts = new Intl.NumberFormat("en-US");

export function formatCount(n: number): string {
  return counts.format(n);
}

/** part / whole as a percentage; "—" when there is nothing to divide, "<0.1%" rather than a misleading "0.0%". */
export function formatPercent(part: number, whole: number): string {
  if (whole <= 0) return "—";
  const pct = (part / whole) * 100;
  if (part > 0 && pct < 0.1) return "<0.1%";
  return `${pct.toFixed(pct >= 10 || pct === 0 ? 0 : 1)}%`;
}

const COMPACT: [number, string][] = [
  [1e12, "T"],
  [1e9, "B"],
  [1e6, "M"],
  [1e3, "k"],
];

/** A count for an axis or a headline: 999 → "999", 1234 → "1.23k", 9_000_000 → "9M". */
export function formatCompact(n: number): string {
  const abs = Math.abs(n);
  for (let i = 0; i < COMPACT.length; i++) {
    const [size, suffix] = COMPACT[i];
    if (abs >= size) {
      const v = abs / size;
      // 999,999 rounds to "1000k": say "1M".
      if (Number(v.toPrecision(3)) >= 1000 && i > 0) return `${n < 0 ? "-" : ""}1${COMPACT[i - 1][1]}`;
      return `${n < 0 ? "-" : ""}${sig3(v)}${suffix}`;
    }
  }
  return String(Math.round(n * 10) / 10);
}
