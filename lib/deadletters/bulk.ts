/**
 * Clean-up of dead letters (issue 13 §12): an operator discards pending letters (with a reason: given up,
 * never to be replayed) or marks them resolved (handled outside Keyward), by id or by a filter over one
 * source. Either settles them: they leave replay selection (which takes pending letters only) and keys at
 * risk (pending only), and retention prunes them like delivered ones. Only pending letters change; a
 * letter held by a running replay (replaying) or already settled is left as it is and reported.
 *
 * Bounded: at most MAX_BULK_IDS ids; a filter matching more than BULK_CONFIRM_ABOVE letters needs the
 * number it matches as `expectedCount` (the way a replay's confirm takes a typed count), a filter matching
 * more than MAX_BULK_FILTER is refused. Everything happens in one transaction with one action-log entry
 * (`dead_letter.discard` / `dead_letter.resolve`, with the reason, the count, the ids and the filter).
 */
import "server-only";
import { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { recordAction } from "@/lib/audit/actions";
import { actorOf, type Principal } from "@/lib/auth/principal";
import { likePattern } from "./list";
import { execute, query, sqlParams } from "@/lib/db/sql";
import {
  BULK_CONFIRM_ABOVE,
  MAX_BULK_FILTER,
  type BulkAction,
  DEAD_LETTER_STATUSES,
  type BulkRequest,
  type BulkResult,
  type DeadLetterStatus,
  type DiscardRequest,
  type ResolveRequest,
} from "./schema";

const SETTLED_AS: Record<BulkAction, DeadLetterStatus> = { discard: "discarded", resolve: "resolved" };

export const discardDeadLetters = (r: DiscardRequest, actor: Principal, db: Db = database()) => settleDeadLetters("discard", r, actor, db);
export const resolveDeadLetters = (r: ResolveRequest, actor: Principal, db: Db = database()) => settleDeadLetters("resolve", r, actor, db);

/**
 * Discards or resolves; 409 when a filter's count is not confirmed. Run again when it deadlocks with a
 * transaction locking the same pending letters in another order (a replay starting).
 */
export async function settleDeadLetters(action: BulkAction, r: BulkRequest, actor: Principal, db: Db = database()): Promise<BulkResult> {
  return withTransaction((tx) => settleIn(tx, action, r, actor), { db, retrySerialization: true, timeout: 30_000, maxWait: 10_000 });
}

async function settleIn(tx: Db, action: BulkAction, r: BulkRequest, actor: Principal): Promise<BulkResult> {
  let take: { id: string; source: string }[];
  const skipped: BulkResult["skipped"] = [];
  if (r.ids) {
    const wanted = [...new Set(r.ids.map((id) => id.toLowerCase()))];
    // Raw SQL: FOR UPDATE, in id order (two bulk actions lock alike).
    const rows = await query(
      z.object({ id: z.string(), source: z.string(), status: z.enum(DEAD_LETTER_STATUSES) }),
      "SELECT id, source, status FROM dead_letters WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE",
      [wanted],
      tx,
    );
    const found = new Map(rows.map((row) => [row.id, row]));
    take = rows.filter((row) => row.status === "pending");
    for (const id of wanted) {
      const row = found.get(id);
      if (!row || row.status !== "pending") skipped.push({ id, status: row?.status ?? null });
    }
  } else {
    const f = r.filter!;
    const { values, p } = sqlParams(f.source);
    const where = ["d.source = $1", "d.status = 'pending'"];
    if (f.failedSince) where.push(`d.failed_at >= ${p(f.failedSince)}::timestamptz`);
    if (f.failedUntil) where.push(`d.failed_at < ${p(f.failedUntil)}::timestamptz`);
    if (f.error) where.push(`d.error ILIKE ${p(likePattern(f.error))}`);
    take = await query(
      z.object({ id: z.string(), source: z.string() }),
      `SELECT d.id, d.source FROM dead_letters d WHERE ${where.join(" AND ")} ORDER BY d.id LIMIT ${MAX_BULK_FILTER + 1} FOR UPDATE`,
      values,
      tx,
    );
    const n = take.length;
    if (n > MAX_BULK_FILTER) {
      throw KeywardError.unprocessable(
        "too_many_dead_letters",
        `the filter matches more than ${MAX_BULK_FILTER} pending dead letters: narrow it (failedSince, failedUntil, error), or send several requests`,
        { fields: [{ field: "filter", message: `matches more than ${MAX_BULK_FILTER}` }] },
      );
    }
    if (r.expectedCount !== undefined ? r.expectedCount !== n : n > BULK_CONFIRM_ABOVE) {
      throw KeywardError.conflict(
        "count_confirmation_required",
        r.expectedCount !== undefined
          ? `the filter matches ${n} pending dead letters, not the ${r.expectedCount} expected: look again, then send expectedCount: ${n}`
          : `the filter matches ${n} pending dead letters (more than ${BULK_CONFIRM_ABOVE}): send expectedCount: ${n} to confirm`,
        { matched: n, expectedCount: r.expectedCount ?? null },
      );
    }
  }

  const ids = take.map((t) => t.id);
  if (ids.length) {
    // Raw SQL: settled by the database clock.
    await execute(
      `UPDATE dead_letters SET status = $2, settled_at = now(), settled_by = $3, settle_reason = $4
       WHERE id = ANY($1::uuid[]) AND status = 'pending'`,
      [ids, SETTLED_AS[action], actorOf(actor), r.reason ?? null],
      tx,
    );
  }
  const sources = [...new Set(take.map((t) => t.source))];
  await recordAction(
    actor,
    {
      action: `dead_letter.${action}`,
      target: { type: "dead_letter", id: ids.length === 1 ? ids[0] : "bulk" },
      source: sources.length === 1 ? sources[0] : r.filter?.source,
      reason: r.reason,
      after: { count: ids.length, ids, ...(r.filter ? { filter: r.filter } : {}), ...(skipped.length ? { skipped: skipped.length } : {}) },
    },
    tx,
  );
  return { ...(action === "discard" ? { discarded: ids.length } : { resolved: ids.length }), ids, skipped } as BulkResult;
}
