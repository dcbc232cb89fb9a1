/** A dead letter's dedup key in words for its page. Pure. */
import { formatDuration } from "@/lib/sources/duration";

/**
 * A letter's dedup key in words for its page: alive until T (green, or amber within 24 h), in flight,
 * expired (red when the event was processed: a replay would process it twice), or none. Pure.
 */
export function describeKey(key: { state: string; expiresAt: string | null; processed: boolean }, nowMs: number): { label: string; detail: string; tone: "ok" | "warn" | "error" | "off" } {
  const at = key.expiresAt ? Date.parse(key.expiresAt) : null;
  const span = (ms: number) => formatDuration(Math.max(60, Math.round(Math.abs(ms) / 60_000) * 60));
  if (key.state === "alive" && at !== null && at > nowMs) {
    return { label: "Alive", detail: `expires in ${span(at - nowMs)}: a replay of a processed event is rejected as a duplicate`, tone: at - nowMs <= 86_400_000 ? "warn" : "ok" };
  }
  if (key.state === "in_flight") return { label: "In flight", detail: "a handler holds its claim now", tone: "off" };
  const processed = key.processed ? "the event was processed: replaying it processes it twice" : "no processing recorded: replaying it is safe";
  if (key.state === "none") return { label: "No key", detail: processed, tone: key.processed ? "error" : "off" };
  return { label: "Expired", detail: `${at !== null ? `${span(nowMs - at)} ago` : ""}; ${processed}`.replace(/^; /, ""), tone: key.processed ? "error" : "off" };
}
