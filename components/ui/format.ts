/**
 * Display formatting shared by console screens: one format per quantity, so a count, a size or a time
 * reads the same on every screen. Pure; fixed locale so output does not vary by machine. Durations are
 * written by lib/sources/duration.ts `formatDuration` (shared with the CLI and the server's messages).
 */

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

/** Three significant digits, trailing zeros dropped: 1.50 → "1.5", 123.4 → "123". */
function sig3(n: number): string {
  return String(Number(n.toPrecision(3)));
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes in binary units, three significant digits (four from 1000): 1536 → "1.5 KiB", 5e9 → "4.66 GiB". */
export function formatBytes(n: number): string {
  let unit = 0;
  let v = Math.abs(n);
  while (v >= 1024 && unit < BYTE_UNITS.length - 1) {
    v /= 1024;
    unit++;
  }
  // 1023.7 KiB rounds to 1024 KiB: say "1 MiB". From 1000 to 1023 the whole number is shown.
  if (unit < BYTE_UNITS.length - 1 && Math.round(v) >= 1024) {
    v /= 1024;
    unit++;
  }
  return `${n < 0 ? "-" : ""}${unit === 0 || v >= 1000 ? Math.round(v) : sig3(v)} ${BYTE_UNITS[unit]}`;
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
