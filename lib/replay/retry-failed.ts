/**
 * Retry failed (issue 13 §9): a new preflight of a finished replay's failures (its failed and
 * skipped_unsafe items whose dead letters are still pending), classified and stored like any preflight
 * (preflight.ts), so the operator confirms it the normal way with the same safety rules; it names the
 * replay it retries (`retryOf`).
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { KeywardError } from "@/lib/errors";
import { database, type Db } from "@/lib/db/transaction";
import type { Principal } from "@/lib/auth/principal";
import { createPreflight } from "./preflight";
import { MAX_PREFLIGHT_ITEMS, REPLAY_STATUSES, type Preflight } from "./schema";

/** 404 unknown replay; 409 replay_not_finished (running or paused) or nothing_to_retry. */
export async function retryFailed(replayId: string, actor: Principal, db: Db = database()): Promise<Preflight> {
  const notFound = () => KeywardError.notFound("replay_not_found", `no replay ${replayId}`);
  const [replay] = await query(z.object({ source: z.string(), status: z.enum(REPLAY_STATUSES) }), "SELECT source, status FROM replays WHERE id = $1", [replayId], db);
  if (!replay) throw notFound();
  if (replay.status !== "completed" && replay.status !== "cancelled") {
    throw KeywardError.conflict(
      "replay_not_finished",
      `replay ${replayId} is ${replay.status}: retry its failed items once it is completed or cancelled`,
    );
  }
  // Raw SQL: a join over the replay's items in their order.
  const failed = await query(
    z.object({ id: z.string() }),
    `SELECT i.dead_letter_id AS id FROM replay_items i JOIN dead_letters d ON d.id = i.dead_letter_id
     WHERE i.replay_id = $1 AND i.outcome IN ('failed', 'skipped_unsafe') AND d.status = 'pending'
     ORDER BY i.seq LIMIT ${MAX_PREFLIGHT_ITEMS}`,
    [replayId],
    db,
  );
  if (failed.length === 0) {
    throw KeywardError.conflict(
      "nothing_to_retry",
      `replay ${replayId} has no failed items whose dead letter is still pending (delivered, discarded or replayed since)`,
    );
  }
  return createPreflight({ source: replay.source, deadLetterIds: failed.map((f) => f.id) }, actor, { retryOf: replayId }, db);
}
