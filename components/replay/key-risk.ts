/**
 * Which pending dead letters' keys are at risk (a replay would process them twice) or expiring soon,
 * soonest first, and the keys-at-risk panel's headline. The verdict is lib/keys/verdict.ts categoryOf,
 * the one the preflight uses. Pure; unit-tested in test/replay/console-view.unit.test.ts.
 */
import { formatCount } from "@/components/ui/format";
import type { DeadLetter } from "@/lib/deadletters/schema";
import { categoryOf } from "@/lib/keys/verdict";
import type { Category } from "@/lib/replay/schema";
import { formatDuration } from "@/lib/sources/duration";

export const DAY_MS = 86_400_000;

export type KeyRisk = {
  item: DeadLetter;
  /** No live key and processed: a replay would process it twice (else: protected now, key expiring within the horizon). */
  expired: boolean;
  msLeft: number | null;
  label: string;
  /** The verdict in the preflight's words (lib/keys/verdict.ts categoryOf: "Expired, processed", "Key alive", "In flight"). */
  verdict: Category;
};

/**
 * Pending dead letters whose replay would process the event twice now (no live key, and processed:
 * `key.processed`; never-claimed or released ones are safe to replay), and those still protected by a
 * live key that expires within `horizonMs` (24 h): the server's keyRisk.expired and keyRisk.expiringSoon.
 * Each with its verdict from the one function the preflight uses (lib/keys/verdict.ts categoryOf), so the
 * panel and the preflight never disagree. A key the list saw alive whose expiry has passed since counts
 * as expired (a live key was claimed: processed). Soonest first: no known expiry, then the earliest expiry
 * (already past before still to come); ties by the older failure.
 */
export function keysAtRisk(items: readonly DeadLetter[], nowMs: number, horizonMs = DAY_MS): KeyRisk[] {
  const risks: KeyRisk[] = [];
  for (const item of items) {
    if (item.status !== "pending") continue;
    const at = item.key.expiresAt ? Date.parse(item.key.expiresAt) : null;
    const lapsed = (item.key.state === "alive" || item.key.state === "in_flight") && at !== null && at <= nowMs;
    const verdict = categoryOf(
      { state: lapsed ? "expired" : item.key.state, processed: item.key.processed || lapsed, expiresAt: at === null ? null : new Date(at) },
      new Date(nowMs),
      horizonMs / 1000,
    );
    if (verdict === "expired_processed") {
      risks.push({ item, expired: true, msLeft: at === null ? null : at - nowMs, label: item.key.state === "none" ? "no live key" : describeExpiry(at, nowMs), verdict });
    } else if (verdict === "expiring" || (verdict === "in_flight" && at !== null && at - nowMs <= horizonMs)) {
      risks.push({ item, expired: false, msLeft: at! - nowMs, label: `protected, ${describeExpiry(at, nowMs)}`, verdict: verdict === "in_flight" ? "in_flight" : "alive" });
    }
  }
  const rank = (r: KeyRisk) => (r.msLeft === null ? Number.NEGATIVE_INFINITY : r.msLeft);
  return risks.sort((a, b) => rank(a) - rank(b) || Date.parse(a.item.failedAt) - Date.parse(b.item.failedAt));
}

/** "expired 2h5m ago", "expires in 40m", "expired" (no time known). Minute precision. */
export function describeExpiry(atMs: number | null, nowMs: number): string {
  if (atMs === null) return "expired";
  const minutes = Math.round(Math.abs(atMs - nowMs) / 60_000);
  const span = minutes === 0 ? "less than a minute" : formatDuration(minutes * 60);
  return atMs <= nowMs ? `expired ${span} ago` : `expires in ${span}`;
}

/**
 * The panel's title and headline, from the server's counts (over all pending dead letters matching): at
 * risk are only the letters a replay would process twice; letters whose live key expires within 24 h are
 * still protected (the preflight says "Key alive") and said so. Null when there are neither.
 */
export function keyRiskHeadline(risk: { expired: number; expiringSoon: number }): { title: string; text: string } | null {
  if (risk.expired === 0 && risk.expiringSoon === 0) return null;
  const soon =
    risk.expiringSoon > 0
      ? `${formatCount(risk.expiringSoon)} ${risk.expiringSoon === 1 ? "is" : "are"} still protected by a live key that expires within 24 h: replay or extend ${risk.expiringSoon === 1 ? "it" : "them"} before then.`
      : null;
  if (risk.expired === 0) return { title: "Keys expiring within 24 h", text: `No pending dead letter is at risk now; ${soon}` };
  const now = `Pending dead letters at risk: ${formatCount(risk.expired)} processed before and no live key any more (a replay would process ${risk.expired === 1 ? "it" : "them"} twice).`;
  return { title: "Keys at risk", text: soon ? `${now} ${soon}` : now };
}
