/**
 * Pure rules that turn the rows returned by the claim statement into per-event answers, in input
 * order, including the events repeated inside one batch. No I/O: unit-tested on its own.
 */
import { z } from "zod";
import { claimKind, claimStatus, type ClaimOutcome, type ClaimResult, type SavedResult } from "./schema";

/** One row per distinct event id, as returned by the claim statement. */
export const ClaimRow = z.object({
  event_id: z.string(),
  status: claimStatus,
  claim_kind: claimKind,
  /** Whether this statement's proposal won: its claim token is the one now stored. */
  claimed_now: z.boolean(),
  /** Whether the stored key was made by this request's attemptId: a repeat of that claim, answered `claimed` again. */
  is_repeat: z.boolean(),
  /** The stored token, returned only when claimed_now or is_repeat (never another caller's token). */
  claim_token: z.string().nullable(),
  payload_hash: z.string().nullable(),
  lease_expires_at: z.date().nullable(),
  received_at: z.date(),
  expires_at: z.date(),
  duplicate_count: z.number(),
  /**
   * The stored key's attempt id (this caller's or another's): server-side only, never in an answer. The Redis
   * first line keeps a digest of it, so a repeat of the attempt that made the key is not answered `duplicate`.
   */
  attempt_id: z.string().nullable(),
  /** The database's time of this claim (now()): with received_at, a duplicate's age; with expires_at, the key's remaining life. */
  db_now: z.date(),
  /** The HTTP status of the result `complete` saved with the key, or null: none is saved. */
  result_status: z.number().nullable(),
  /** The saved result's headers and body: answered by the single-event statements only (null from a batch's). */
  result_headers: z.record(z.string(), z.string()).nullable(),
  result_body: z.instanceof(Buffer).nullable(),
});
export type ClaimRow = z.output<typeof ClaimRow>;

export type ClaimInput = { eventId: string; eventType: string; payloadHash?: string; attemptId?: string };

/** The distinct events to send to the database, each with how many times it repeats later in the batch. */
export function dedupeBatch(events: readonly ClaimInput[]): { first: ClaimInput; repeats: number }[] {
  const byId = new Map<string, { first: ClaimInput; repeats: number }>();
  for (const e of events) {
    const seen = byId.get(e.eventId);
    if (seen) {
      if (hashesConflict(seen.first.payloadHash, e.payloadHash)) continue;
      seen.repeats++;
      // The key keeps the first payload hash it is claimed with (keyward_merge_claim): one an earlier
      // occurrence lacked is sent with the first, so a third, different one is a mismatch.
      if (seen.first.payloadHash == null && e.payloadHash != null) seen.first = { ...seen.first, payloadHash: e.payloadHash };
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
    if (outcome === "duplicate" && row.result_status !== null) {
      const saved = savedResultOf(row);
      if (saved) result.result = saved;
      else result.resultSaved = true;
    }
    return result;
  });
}

/** The saved result of a row that carries its bytes (a single-event statement's), or undefined. */
export function savedResultOf(row: Pick<ClaimRow, "result_status" | "result_headers" | "result_body">): SavedResult | undefined {
  if (row.result_status === null || row.result_body === null) return undefined;
  return { status: row.result_status, headers: row.result_headers ?? {}, bodyBase64: row.result_body.toString("base64") };
}
