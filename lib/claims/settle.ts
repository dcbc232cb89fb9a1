/**
 * Settling a claim: `completeClaim` marks an in-flight claim done, `releaseClaim` deletes a claim whose
 * handler failed so the sender's retry is processed. Each is one statement that locks the key, decides,
 * writes, and appends the audit row together; the locked "before" row explains a refusal.
 * Raw SQL: each is one CTE (lock, decide, write, audit) on the claim path, one round trip.
 */
import "server-only";
import { KeywardError } from "../errors";
import { query } from "../db/sql";
import type { ClaimStatus, ParsedCompleteRequest, ParsedReleaseRequest, SettleResult } from "./schema";
import { forgetBeforeRelease } from "./redis";

export type { SettleResult };
import type { ClaimOptions } from "./claim";

type SettleRow = {
  status: ClaimStatus;
  token_matches: boolean;
  expired: boolean;
  changed: boolean;
  event_type: string;
  received_at: Date;
  expires_at: Date;
  duplicate_count: number;
};

const COMPLETE_SQL = `
WITH cur AS (
  SELECT source, event_id, event_type, status, claim_token = $3::uuid AS token_matches, expires_at <= now() AS expired,
         received_at, expires_at, duplicate_count
  FROM dedup_keys WHERE source = $1 AND event_id = $2 FOR UPDATE
),
upd AS (
  UPDATE dedup_keys k SET status = 'done', lease_expires_at = NULL
  FROM cur
  WHERE k.source = cur.source AND k.event_id = cur.event_id
    AND cur.token_matches AND NOT cur.expired AND cur.status = 'processing'
  RETURNING k.source, k.event_id, k.event_type
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor)
  SELECT source, event_id, event_type, 'completed', $4 FROM upd
)
SELECT cur.*, EXISTS (SELECT 1 FROM upd) AS changed FROM cur`;

const RELEASE_SQL = `
WITH cur AS (
  SELECT source, event_id, event_type, status, ($3::uuid IS NULL OR claim_token = $3::uuid) AS token_matches,
         expires_at <= now() AS expired, received_at, expires_at, duplicate_count
  FROM dedup_keys WHERE source = $1 AND event_id = $2 FOR UPDATE
),
del AS (
  DELETE FROM dedup_keys k USING cur
  WHERE k.source = cur.source AND k.event_id = cur.event_id AND cur.token_matches AND NOT cur.expired
  RETURNING k.source, k.event_id, k.event_type, k.status
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT source, event_id, event_type, 'released', $4,
         jsonb_build_object('statusBefore', status, 'withToken', $3::uuid IS NOT NULL) FROM del
)
SELECT cur.*, EXISTS (SELECT 1 FROM del) AS changed FROM cur`;


function refuse(row: SettleRow | undefined, source: string, eventId: string, action: string): asserts row is SettleRow {
  if (!row || row.expired) {
    throw KeywardError.notFound(
      "key_not_found",
      row ? `the key ${source}/${eventId} has expired; there is no claim to ${action}` : `no key ${source}/${eventId}`,
    );
  }
  if (!row.token_matches) {
    throw KeywardError.conflict("claim_token_mismatch", `claimToken does not match the current claim of ${source}/${eventId}`);
  }
}

function settled(key: { source: string; eventId: string }, row: SettleRow, status: SettleResult["status"]): SettleResult {
  return {
    source: key.source,
    eventId: key.eventId,
    status,
    firstSeenAt: row.received_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    duplicateCount: row.duplicate_count,
  };
}

/** Marks an in-flight claim done. Completing an already-done claim with its own token is a no-op. */
export async function completeClaim(r: ParsedCompleteRequest, options: ClaimOptions = {}): Promise<SettleResult> {
  const [row] = await query<SettleRow>(COMPLETE_SQL, [r.source, r.eventId, r.claimToken, options.actor ?? "library"], options.on);
  refuse(row, r.source, r.eventId, "complete");
  return settled(r, row, "done");
}

/** Deletes a live claim (with its token, or unconditionally without one) so the next delivery is processed. */
export async function releaseClaim(r: ParsedReleaseRequest, options: ClaimOptions = {}): Promise<SettleResult> {
  // Redis must not answer `duplicate` for the released key once this answers (redis.ts): its entry goes
  // first, or every server moves to a new Redis namespace and this waits out the bound.
  const finish = await forgetBeforeRelease(r.source, r.eventId);
  const [row] = await query<SettleRow>(
    RELEASE_SQL,
    [r.source, r.eventId, r.claimToken ?? null, options.actor ?? "library"],
    options.on,
  );
  await finish?.();
  refuse(row, r.source, r.eventId, "release");
  return settled(r, row, "released");
}
