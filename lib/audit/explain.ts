/**
 * "Did we process event X, and when?": joins the two lifetimes of an event, the dedup key as it is now
 * (short-lived, pruned after its TTL) and the audit history (kept for months), into one answer. Pure: the
 * caller reads the key row and the timeline; this decides what they mean.
 *
 * When the key is gone, its expiry comes from the history: the last claim row's `detail.expiresAt`
 * (written by the claim statement, lib/claims/claim.ts); a `released` row after it means the key was
 * deleted on purpose so the next delivery would be processed.
 */
import { decideKey, DECIDING_KINDS, type DecidingKind } from "@/lib/keys/verdict";
import { CLAIM_KINDS, type AuditRow, type EventExplanation, type KeyRow, type LateClaim } from "./schema";

/** Audit times carry microseconds; the answer speaks in plain ISO instants like the key's. */
const iso = (x: string | null | undefined) => (x ? new Date(x).toISOString() : null);

const isClaim = (r: AuditRow) => (CLAIM_KINDS as readonly string[]).includes(r.kind);

function detailTime(r: AuditRow | undefined, field: string): string | null {
  const v = r?.detail?.[field];
  if (typeof v !== "string" || Number.isNaN(Date.parse(v))) return null;
  return new Date(v).toISOString();
}

const maxIso = (...xs: (string | null | undefined)[]) =>
  xs.map(iso).filter((x): x is string => !!x).reduce<string | null>((m, x) => (m === null || Date.parse(x) > Date.parse(m) ? x : m), null);
const minIso = (...xs: (string | null | undefined)[]) =>
  xs.map(iso).filter((x): x is string => !!x).reduce<string | null>((m, x) => (m === null || Date.parse(x) < Date.parse(m) ? x : m), null);

const STORY_KINDS = new Set(["dead_lettered", "replayed"]);
const short = (text: unknown, max = 80) => {
  const t = typeof text === "string" ? text : "";
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

/** A `replayed` row this soon after a late claim marks it as replay-driven (as lib/retention/late-duplicates.ts). */
const REPLAY_MATCH_MS = 3_600_000;

/**
 * The claims that processed the event again after its key had expired (late duplicates), by the rule of
 * lib/retention/late-duplicates.ts: a `claimed` or `reclaimed_after_expiry` row whose previous claim-or-
 * release row of the event is a claim (a release before it means the key was freed on purpose; a lease
 * takeover is the same key, not a new claim). Each with the claim it repeats, the gap, and whether a
 * Keyward replay drove it (a `replayed` row within an hour after it). `timeline` oldest first.
 */
export function lateClaims(timeline: readonly AuditRow[]): LateClaim[] {
  const out: LateClaim[] = [];
  let previous: AuditRow | null = null;
  for (const r of timeline) {
    if (r.kind !== "claimed" && r.kind !== "reclaimed_after_expiry" && r.kind !== "released") continue;
    if (r.kind !== "released" && previous && previous.kind !== "released") {
      const at = Date.parse(r.at);
      out.push({
        firstClaimAt: iso(previous.at)!,
        lateClaimAt: iso(r.at)!,
        gapSeconds: (at - Date.parse(previous.at)) / 1000,
        keyThen: r.kind === "reclaimed_after_expiry" ? "unpruned" : "pruned",
        viaReplay: timeline.some((x) => x.kind === "replayed" && Date.parse(x.at) >= at && Date.parse(x.at) < at + REPLAY_MATCH_MS),
        auditId: r.id,
      });
    }
    previous = r;
  }
  return out;
}

const TIMES = ["never", "once", "twice", "three times"];
const times = (n: number) => TIMES[n] ?? `${n} times`;

/** "Processed twice: at T1, and again at T2 after its key had expired (a late duplicate)." */
export function processedTwiceSentence(late: readonly LateClaim[]): string | null {
  if (late.length === 0) return null;
  const again = late.map((l) => `at ${l.lateClaimAt}${l.viaReplay ? " (by a replay)" : ""}`).join(", ");
  return `Processed ${times(late.length + 1)}: at ${late[0].firstClaimAt}, and again ${again} after its key had expired (${late.length === 1 ? "a late duplicate" : "late duplicates"}).`;
}

/**
 * The story of an event, oldest first, when its history holds dead-letter or replay rows: each claim
 * ("processed at T", "claimed at T" for a leased one), release, dead-lettering (with its error) and replay
 * result ("replayed at T → delivered"), joined by "; ". Null when there is nothing but claims.
 */
export function eventStory(timeline: readonly AuditRow[]): string | null {
  if (!timeline.some((r) => STORY_KINDS.has(r.kind))) return null;
  const parts: string[] = [];
  const late = new Set(lateClaims(timeline).map((l) => l.auditId));
  for (const r of timeline) {
    const at = iso(r.at);
    if (isClaim(r)) parts.push(`${r.detail?.leaseExpiresAt ? "claimed" : "processed"}${late.has(r.id) ? " again (its key had expired)" : ""} at ${at}`);
    else if (r.kind === "completed") parts.push(`completed at ${at}`);
    else if (r.kind === "released") parts.push(`released at ${at}`);
    else if (r.kind === "dead_lettered") parts.push(`dead-lettered at ${at}${r.detail?.error ? ` (${short(r.detail.error)})` : ""}`);
    else if (r.kind === "replayed") {
      const outcome = typeof r.detail?.outcome === "string" ? r.detail.outcome.replace("_", " ") : "sent";
      parts.push(`replayed at ${at} → ${outcome}${outcome !== "delivered" && r.detail?.error ? ` (${short(r.detail.error)})` : ""}`);
    }
  }
  if (parts.length === 0) return null;
  const text = parts.join("; ");
  return `${text[0].toUpperCase()}${text.slice(1)}.`;
}

/** `timeline` oldest first; `now` the database time of the key read. */
export function explainEvent(
  key: { source: string; eventId: string; row: KeyRow | null },
  timeline: readonly AuditRow[],
  now: Date,
): EventExplanation {
  const answer = explainKey(key, timeline, now);
  const late = lateClaims(timeline);
  // The event's key by the one verdict (lib/keys/verdict.ts), as the dead-letter list and the preflight see it.
  const deciding = [...timeline].reverse().find((r) => (DECIDING_KINDS as readonly string[]).includes(r.kind));
  const verdict = decideKey(
    {
      expiresAt: key.row ? new Date(key.row.expiresAt) : null,
      status: key.row?.status ?? null,
      leaseExpiresAt: key.row?.leaseExpiresAt ? new Date(key.row.leaseExpiresAt) : null,
      lastKind: (deciding?.kind as DecidingKind | undefined) ?? null,
      lastAt: deciding ? new Date(deciding.at) : null,
    },
    now,
  );
  const twice = processedTwiceSentence(late);
  return {
    ...answer,
    headline: eventStory(timeline) ?? twice ?? answer.sentence,
    keyState: verdict.state,
    processed: verdict.processed,
    timesProcessed: late.length > 0 ? late.length + 1 : verdict.processed ? 1 : 0,
    lateClaims: late,
  };
}

type KeyAnswer = Omit<EventExplanation, "headline" | "keyState" | "processed" | "timesProcessed" | "lateClaims">;

function explainKey(
  key: { source: string; eventId: string; row: KeyRow | null },
  timeline: readonly AuditRow[],
  now: Date,
): KeyAnswer {
  const claims = timeline.filter(isClaim);
  const lastClaim = claims[claims.length - 1];
  const afterLastClaim = lastClaim ? timeline.slice(timeline.indexOf(lastClaim) + 1) : timeline;
  const completed = afterLastClaim.filter((r) => r.kind === "completed").pop();
  const released = afterLastClaim.filter((r) => r.kind === "released").pop();
  const row = key.row;

  const processedAt = row ? maxIso(row.receivedAt, lastClaim?.at) : iso(lastClaim?.at);
  const base = {
    source: key.source,
    eventId: key.eventId,
    eventType: row?.eventType ?? lastClaim?.eventType ?? timeline.find((r) => r.eventType)?.eventType ?? null,
    processedAt,
    completedAt: iso(completed?.at),
    releasedAt: iso(released?.at),
    firstSeenAt: minIso(claims[0]?.at, row?.receivedAt),
    lastSeenAt: maxIso(lastClaim?.at, row?.receivedAt, row?.lastDuplicateAt),
    claims: Math.max(claims.length, row ? 1 : 0),
  };

  if (row) {
    const alive = Date.parse(row.expiresAt) > now.getTime();
    const what =
      row.status === "processing"
        ? `Claimed at ${processedAt}, still processing (lease until ${row.leaseExpiresAt})`
        : `Processed at ${processedAt}`;
    return {
      ...base,
      fate: alive ? "alive" : "expired",
      sentence: alive
        ? `${what}; key alive until ${row.expiresAt}.`
        : `${what}; key expired at ${row.expiresAt} and is waiting to be pruned.`,
      status: row.status,
      keyExpiresAt: row.expiresAt,
      leaseExpiresAt: row.leaseExpiresAt,
      duplicateCount: row.duplicateCount,
    };
  }

  const gone = { status: null, leaseExpiresAt: null, duplicateCount: null } as const;
  if (!lastClaim) {
    return {
      ...base,
      ...gone,
      fate: "never_seen",
      sentence: "Never seen: no key now and no claim in the audit history.",
      keyExpiresAt: null,
    };
  }
  const expiresAt = detailTime(lastClaim, "expiresAt");
  if (released) {
    return {
      ...base,
      ...gone,
      fate: "released",
      sentence: `Claimed at ${processedAt} and released at ${base.releasedAt}: the key was deleted, so the next delivery is processed again.`,
      keyExpiresAt: null,
    };
  }
  if (expiresAt && Date.parse(expiresAt) <= now.getTime()) {
    // A claim without a lease is done at once; a leased one is done when a `completed` row follows it.
    const done = completed || !lastClaim.detail?.leaseExpiresAt;
    const how = done ? "Processed" : "Claimed (never completed)";
    return {
      ...base,
      ...gone,
      fate: "pruned",
      sentence: `${how} at ${processedAt}; key expired at ${expiresAt} and was pruned.`,
      keyExpiresAt: expiresAt,
    };
  }
  return {
    ...base,
    ...gone,
    fate: "missing",
    sentence: `Claimed at ${processedAt}, but the key is gone before its expiry${expiresAt ? ` (${expiresAt})` : ""}: it was deleted outside Keyward.`,
    keyExpiresAt: expiresAt,
  };
}
