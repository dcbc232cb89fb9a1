/**
 * Dead-letter retention: deletes settled (delivered, discarded, resolved) dead letters, with their replay
 * attempts (ON DELETE CASCADE), whose settlement is older than their
 * source's dead-letter retention (or KEYWARD_DEAD_LETTER_RETENTION_DAYS for a source without one); and
 * the chunks of large payloads whose request failed before its letter was stored (payload-store.ts), an
 * hour on.
 * Pending and replaying letters are never pruned: they are still work to do.
 *
 * When it runs: after each pruning run of the server's schedule (lib/retention/schedule.ts), and on demand
 * (tests, scripts). How it bounds its work: batches of `batchSize` letters, oldest settlement first
 * through the partial index on settled_at, each batch one statement; it stops at a short batch or after
 * `maxBatches`. Replay results (replay_items) keep their rows: they do not reference the letter.
 */
import "server-only";
import { loadEnv } from "@/lib/config/env";
import { execute } from "@/lib/db/sql";
import { pruneAbandonedUploads } from "./payload-store";

const PRUNE_SQL = `
DELETE FROM dead_letters
WHERE id = ANY(ARRAY(
  SELECT d.id FROM dead_letters d JOIN sources s ON s.name = d.source
  WHERE d.status IN ('delivered', 'discarded', 'resolved')
    AND d.settled_at < now() - make_interval(secs => coalesce(s.dead_letter_retention_seconds, $2::int))
  ORDER BY d.settled_at LIMIT $1 FOR UPDATE OF d SKIP LOCKED))
  AND status IN ('delivered', 'discarded', 'resolved')`;

export async function pruneSettledDeadLetters(o: { batchSize?: number; maxBatches?: number } = {}): Promise<{ deleted: number; batches: number }> {
  const batchSize = o.batchSize ?? 1000;
  const maxBatches = o.maxBatches ?? 50;
  const defaultSeconds = loadEnv().KEYWARD_DEAD_LETTER_RETENTION_DAYS * 86400;
  let deleted = 0;
  let batches = 0;
  while (batches < maxBatches) {
    const n = await execute(PRUNE_SQL, [batchSize, defaultSeconds]);
    batches++;
    deleted += n;
    if (n < batchSize) break;
  }
  await pruneAbandonedUploads();
  return { deleted, batches };
}
