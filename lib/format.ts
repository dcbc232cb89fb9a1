/**
 * One format per quantity, shared by the console (components/ui/format.ts re-exports these) and the CLI:
 * a byte size in IEC units (KiB, MiB: what the database and the payload limits count in), an instant as
 * one date format, and a time relative to now ("5 min ago") whose absolute form goes on hover. Pure;
 * fixed locale, so the output does not vary by machine (the time zone is the reader's).
 */

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

/** Whether a stored value is an instant, by the API's one rule for times (lib/http/fields.ts). */
export { isInstant } from "@/lib/http/fields";

/** Seconds between `iso` and `nowMs` as a person says it: "just now", "45 s ago", "5 min ago", "3 h ago", "2 d ago"; "in 5 min" ahead. */
export function formatRelative(iso: string, nowMs: number): string {
  const seconds = Math.round((nowMs - Date.parse(iso)) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 10) return "just now";
  const span =
    abs < 60 ? `${abs} s` : abs < 3600 ? `${Math.floor(abs / 60)} min` : abs < 86400 ? `${Math.floor(abs / 3600)} h` : `${Math.floor(abs / 86400)} d`;
  return seconds >= 0 ? `${span} ago` : `in ${span}`;
}

/** Three significant digits, trailing zeros dropped: 1.50 → "1.5", 123.4 → "123". */
export function sig3(n: number): string {
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

