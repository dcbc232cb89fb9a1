/**
 * Pure rules that turn the rows returned by the claim statement into per-event answers, in input
 * order, including the events repeated inside one batch. No I/O: unit-tested on its own.
 */
import type { ClaimKind, ClaimOutcome, ClaimResult, ClaimStatus } from "./schema";

/** One row per distinct event id, as returned by the claim statement. */
export type ClaimRow = {
  event_id: string;
  status: ClaimStatus;
  claim_kind: ClaimKind;
  /** Whether this statement's proposal won: its claim token is the one now stored. */
  claimed_now: boolean;
  /** Whether the stored key was made by this request's attemptId: a repeat of that claim, answered `claimed` again. */
  is_repeat: boolean;
  /** The stored token, returned only when claimed_now or is_repeat (never another caller's token). */
  claim_token: string | null;
  payload_hash: string | null;
  lease_expires_at: Date | null;
  received_at: Date;
  expires_at: Date;
  duplicate_count: number;
  /**
   * The stored key's attempt id (this caller's or another's): server-side only, never in an answer. The Redis
   * first line keeps a digest of it, so a repeat of the attempt that made the key is not answered `duplicate`.
   */
  attempt_id: string | null;
  /** The database's time of this claim (now()): with received_at, a duplicate's age; with expires_at, the key's remaining life. */
  db_now: Date;
};

export type ClaimInput = { eventId: string; eventType: string; payloadHash?: string; attemptId?: string };

/** The distinct events to send to the database, each with how many times it repeats later in the batch. */
export function dedupeBatch(events: readonly ClaimInput[]): { first: ClaimInput; repeats: number }[] {
  const byId = new Map<string, { first: ClaimInput; repeats: number }>();
  for (const e of events) {
    const seen = byId.get(e.eventId);
    if (seen) {
      if (!hashesConflict(seen.first.payloadHash, e.payloadHash)) seen.repeats++;
    } else {
      byId.set(e.eventId, { first: e, repeats: 0 });
    }
  }
  return [...byId.values()];
}

export function hashesConflict(a: string | null | undefined, b: string | null | undefined): boolean {
  return a != null && b != null && a !== b;
}

function outcomeOf(row: ClaimRow, input: ClaimInput, firstOccurrence: boolean): ClaimOutcome {
  if (row.claimed_now && firstOccurrence) return "claimed";
  if (hashesConflict(row.payload_hash, input.payloadHash)) return "payload_mismatch";
  if (row.is_repeat && firstOccurrence) return "claimed";
  if (row.claimed_now || row.is_repeat) return "duplicate"; // a repeat of this batch's own claim
  if (row.status === "processing") return "in_flight";
  return "duplicate";
}

/**
 * Answers for every input event in input order. An event repeated inside the batch is answered
 * `duplicate` after its first occurrence (or `payload_mismatch` if its hash differs from the stored one;
 * `in_flight` if the first occurrence found a running lease held by someone else).
 */
export function classifyClaims(source: string, events: readonly ClaimInput[], rows: readonly ClaimRow[]): ClaimResult[] {
  const rowById = new Map(rows.map((r) => [r.event_id, r]));
  const answered = new Set<string>();
  return events.map((input) => {
    const row = rowById.get(input.eventId);
    if (!row) throw new Error(`claim statement returned no row for event ${input.eventId}`);
    const firstOccurrence = !answered.has(input.eventId);
    answered.add(input.eventId);
    const outcome = outcomeOf(row, input, firstOccurrence);
    const result: ClaimResult = {
      outcome,
      source,
      eventId: input.eventId,
      status: row.status,
      firstSeenAt: row.received_at.toISOString(),
      expiresAt: row.expires_at.toISOString(),
      duplicateCount: row.duplicate_count,
    };
    if (outcome === "claimed") {
      result.claimKind = row.claim_kind;
      if (row.claim_token) result.claimToken = row.claim_token;
      if (!row.claimed_now) result.repeat = true;
    }
    if ((outcome === "claimed" || outcome === "in_flight") && row.lease_expires_at) {
      result.leaseExpiresAt = row.lease_expires_at.toISOString();
    }
    return result;
  });
}
