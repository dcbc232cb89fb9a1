/** Display formatting shared by console screens. Pure; fixed locale so output does not vary by machine. */

const counts = new Intl.NumberFormat("en-US");

export function formatCount(n: number): string {
  return counts.format(n);
}

const UNITS: [suffix: string, seconds: number][] = [
  ["d", 86400],
  ["h", 3600],
  ["m", 60],
  ["s", 1],
];

/** 605100 → "7d 5m": every non-zero unit, so a configured TTL reads back exactly as it was given. */
export function formatDuration(totalSeconds: number): string {
  let rest = Math.max(0, Math.floor(totalSeconds));
  const parts: string[] = [];
  for (const [suffix, size] of UNITS) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n > 0) parts.push(`${n}${suffix}`);
  }
  return parts.length > 0 ? parts.join(" ") : "0s";
}

/** part / whole as a percentage; "—" when there is nothing to divide, "<0.1%" rather than a misleading "0.0%". */
export function formatPercent(part: number, whole: number): string {
  if (whole <= 0) return "—";
  const pct = (part / whole) * 100;
  if (part > 0 && pct < 0.1) return "<0.1%";
  return `${pct.toFixed(pct >= 10 || pct === 0 ? 0 : 1)}%`;
}

/** An ISO instant as local wall-clock time, 24 h: "14:03:27" (or "14:03" without seconds). */
export function formatClockTime(iso: string, withSeconds = true): string {
  return new Date(iso).toLocaleTimeString("en-GB", {
    hour: "2-digit",
    minute: "2-digit",
    second: withSeconds ? "2-digit" : undefined,
  });
}

/** An ISO instant as a local date and time: "2 Dec 2026, 14:03" (or "2 Dec 2026, 14:03:27" with seconds). */
export function formatDateTime(iso: string, withSeconds = false): string {
  return new Date(iso).toLocaleString("en-GB", { dateStyle: "medium", timeStyle: withSeconds ? "medium" : "short" });
}
