/**
 * Settling a claim: `completeClaim` marks an in-flight claim done (optionally saving its result),
 * `extendClaim` extends a running lease (a client's heartbeat), `releaseClaim` deletes a claim whose handler
 * failed so the sender's retry is processed. Each is one statement that locks the key, decides, writes, and
 * appends the audit row together (an extension writes none: a heartbeat every few seconds would flood the
 * history); the locked "before" row explains a refusal.
 * Raw SQL: each is one CTE (lock, decide, write, audit) on the claim path, one round trip; complete and
 * extend prepared.
 */
import "server-only";
import { createHash } from "node:crypto";
import { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { loadEnv } from "@/lib/config/env";
import { query, type PreparedSql } from "@/lib/db/sql";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { claimStatus, type ExtendResult, type ParsedCompleteRequest, type ParsedExtendRequest, type ParsedReleaseRequest, type SettleResult } from "./schema";
import { forgetReleasedKey } from "./redis";

export type { SettleResult, ExtendResult };
import type { ClaimOptions } from "./claim";

const SettleRow = z.object({
  status: claimStatus,
  token_matches: z.boolean(),
  expired: z.boolean(),
  changed: z.boolean(),
  event_type: z.string(),
  received_at: z.date(),
  expires_at: z.date(),
  duplicate_count: z.number(),
});
type SettleRow = z.output<typeof SettleRow>;

const CompleteRow = SettleRow.extend({ save_results: z.boolean().nullable(), result_saved: z.boolean() });

/**
 * $5–$7: the result to save (status, headers, body), all NULL for none; $8 its SHA-256 (hex), which the audit
 * row records instead of the bytes. A result is written only if the source keeps results (save_results); if
 * not, nothing changes and the library refuses the call (422).
 */
export const COMPLETE_SQL: PreparedSql = { name: "keyward_complete", text: `
WITH cur AS (
  SELECT k.source, k.event_id, k.event_type, k.status, k.claim_token = $3::uuid AS token_matches,
         k.expires_at <= now() AS expired, k.received_at, k.expires_at, k.duplicate_count,
         k.result_status IS NOT NULL AS had_result, s.save_results
  FROM dedup_keys k LEFT JOIN sources s ON s.name = k.source
  WHERE k.source = $1 AND k.event_id = $2 FOR UPDATE OF k
),
upd AS (
  UPDATE dedup_keys k SET status = 'done', lease_expires_at = NULL,
         result_status = $5::smallint, result_headers = $6::jsonb, result_body = $7::bytea
  FROM cur
  WHERE k.source = cur.source AND k.event_id = cur.event_id
    AND cur.token_matches AND NOT cur.expired AND cur.status = 'processing'
    AND ($5::smallint IS NULL OR cur.save_results)
  RETURNING k.source, k.event_id, k.event_type, k.result_status IS NOT NULL AS result_saved
),
audited AS (
  INSERT INTO audit_events (source, event_id, event_type, kind, actor, detail)
  SELECT source, event_id, event_type, 'completed', $4,
         CASE WHEN result_saved THEN jsonb_build_object('result',
           jsonb_build_object('status', $5::smallint, 'bytes', octet_length($7::bytea), 'sha256', $8::text)) END
  FROM upd
)
SELECT cur.status, cur.token_matches, cur.expired, cur.event_type, cur.received_at, cur.expires_at, cur.duplicate_count,
       cur.save_results, EXISTS (SELECT 1 FROM upd) AS changed,
       coalesce((SELECT result_saved FROM upd), cur.had_result) AS result_saved
FROM cur` };

/**
 * $4: the lease's new length from the database's now(). A key never expires while its lease runs, so its
 * expiry grows with the lease when needed (at most a day from now: within partition mode's reach, see
 * prisma/migrations/20261205051000_partition_claim_reach). A lapsed lease that nobody took over is still the
 * token holder's and can be extended.
 */
export const EXTEND_SQL: PreparedSql = { name: "keyward_extend", text: `
WITH cur AS (
  SELECT source, event_id, status, claim_token = $3::uuid AS token_matches, expires_at <= now() AS expired,
         received_at, expires_at, duplicate_count
  FROM dedup_keys WHERE source = $1 AND event_id = $2 FOR UPDATE
),
upd AS (
  UPDATE dedup_keys k SET lease_expires_at = now() + make_interval(secs => $4::int),
         expires_at = greatest(k.expires_at, now() + make_interval(secs => $4::int))
  FROM cur
  WHERE k.source = cur.source AND k.event_id = cur.event_id
    AND cur.token_matches AND NOT cur.expired AND cur.status = 'processing'
  RETURNING k.lease_expires_at, k.expires_at
)
SELECT cur.status, cur.token_matches, cur.expired, cur.received_at, cur.duplicate_count,
       upd.lease_expires_at, coalesce(upd.expires_at, cur.expires_at) AS expires_at, upd.lease_expires_at IS NOT NULL AS changed
FROM cur LEFT JOIN upd ON true` };

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


function refuse<R extends Pick<SettleRow, "expired" | "token_matches">>(
  row: R | undefined,
  source: string,
  eventId: string,
  action: string,
): asserts row is R {
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

/**
 * Marks an in-flight claim done, saving `r.result` with the key when given (the source must keep results:
 * 422 results_not_kept otherwise; a body over KEYWARD_RESULT_MAX_BYTES: 422 result_too_large; either way
 * nothing changes). Completing an already-done claim with its own token is a no-op (its result, if any, stays
 * the first call's).
 */
export async function completeClaim(r: ParsedCompleteRequest, options: ClaimOptions = {}, db: Db = database()): Promise<SettleResult> {
  let result: [number, string, Buffer, string] | [null, null, null, null] = [null, null, null, null];
  if (r.result) {
    const body = Buffer.from(r.result.bodyBase64, "base64");
    const max = loadEnv().KEYWARD_RESULT_MAX_BYTES;
    if (body.byteLength > max) {
      throw KeywardError.unprocessable(
        "result_too_large",
        `result.bodyBase64 decodes to ${body.byteLength} bytes; a saved result's body may hold at most ${max} (KEYWARD_RESULT_MAX_BYTES)`,
        { field: "result.bodyBase64", bytes: body.byteLength, limit: max },
      );
    }
    result = [r.result.status, JSON.stringify(r.result.headers), body, createHash("sha256").update(body).digest("hex")];
  }
  const [row] = await query(CompleteRow, COMPLETE_SQL, [r.source, r.eventId, r.claimToken, options.actor ?? "library", ...result], db);
  refuse(row, r.source, r.eventId, "complete");
  if (r.result && !row.changed && row.status === "processing" && !row.save_results) {
    throw KeywardError.unprocessable(
      "results_not_kept",
      `source "${r.source}" does not keep results: complete without one, or turn them on (\`keyward source update ${r.source} --save-results on\`)`,
      { field: "result" },
    );
  }
  return { ...settled(r, row, "done"), resultSaved: row.result_saved };
}

const ExtendRow = z.object({
  status: claimStatus,
  token_matches: z.boolean(),
  expired: z.boolean(),
  received_at: z.date(),
  duplicate_count: z.number(),
  lease_expires_at: z.date().nullable(),
  expires_at: z.date(),
  changed: z.boolean(),
});

/**
 * Extends a running lease to `leaseSeconds` from now (database clock). 404 for no key (released, or never
 * claimed) or an expired one, 409 claim_token_mismatch when another claim took the lease over, 409
 * claim_not_in_flight when the claim is already complete.
 */
export async function extendClaim(r: ParsedExtendRequest, _options: ClaimOptions = {}, db: Db = database()): Promise<ExtendResult> {
  const [row] = await query(ExtendRow, EXTEND_SQL, [r.source, r.eventId, r.claimToken, r.leaseSeconds], db);
  refuse(row, r.source, r.eventId, "extend");
  if (!row.changed) {
    throw KeywardError.conflict("claim_not_in_flight", `the claim of ${r.source}/${r.eventId} is already complete; there is no lease to extend`);
  }
  return {
    source: r.source,
    eventId: r.eventId,
    status: "processing",
    leaseExpiresAt: row.lease_expires_at!.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    firstSeenAt: row.received_at.toISOString(),
    duplicateCount: row.duplicate_count,
  };
}

/**
 * Deletes a live claim (with its token, or unconditionally without one) so the next delivery is processed.
 *
 * One transaction: the statement locks and deletes the row (and writes the audit row); then, still holding
 * the lock and before the commit, Redis forgets the key (lib/claims/redis.ts, forgetReleasedKey: the entry
 * is deleted and tombstoned, or every server moves to a new namespace). Forgetting before the commit is what
 * makes it safe: a claim that saw the old key ran before the lock, so whatever Redis loses later, no entry of
 * it can answer once the release has committed. Inside a caller's own transaction (`db`), the caller's commit
 * comes later still; on a bare pg connection of the caller's (`connectionDb`) not in a transaction, the statement
 * commits at once and Redis forgets the key right after it.
 */
/**
 * The release transaction's bounds: a connection within the connect timeout; its whole life the statement,
 * Redis's 1 s, a namespace move's connect and 1 s wait, with room to spare (Prisma's default is 5 s).
 */
function transactionBounds(db: Db) {
  const env = loadEnv();
  return { db, maxWait: env.KEYWARD_DB_CONNECT_TIMEOUT_MS, timeout: env.KEYWARD_DB_STATEMENT_TIMEOUT_MS + 2 * env.KEYWARD_DB_CONNECT_TIMEOUT_MS + 5_000 };
}

export async function releaseClaim(r: ParsedReleaseRequest, options: ClaimOptions = {}, db: Db = database()): Promise<SettleResult> {
  const params = [r.source, r.eventId, r.claimToken ?? null, options.actor ?? "library"];
  const release = async (conn: Db) => {
    const [row] = await query(SettleRow, RELEASE_SQL, params, conn);
    if (row?.changed) await forgetReleasedKey(r.source, r.eventId, conn);
    return row;
  };
  // The shared pool's handle or a transaction's: in a transaction; a caller's own connection: as it is.
  const row =
    db === database() || db.inTransaction ? await withTransaction((tx) => release(tx), transactionBounds(db)) : await release(db);
  refuse(row, r.source, r.eventId, "release");
  return settled(r, row, "released");
}
