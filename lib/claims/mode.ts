/**
 * Which shape the dedup table has: "single" (one table, unique primary key (source, event_id), claims by
 * INSERT … ON CONFLICT) or "partition" (range-partitioned by expiry day, claims through
 * keyward_claim_partitioned(); see `keyward partitions enable` and docs/architecture.md).
 *
 * Partitioned iff pg_class.relkind of dedup_keys is 'p'. The answer is cached per process for
 * MODE_TTL_MS; a claim that fails because the table changed shape under a running server refreshes it at
 * once (claim.ts). The cache is process-wide (lib/process-global.ts): Next's route bundles and the server's own modules are
 * separate module instances.
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { processGlobal } from "@/lib/process-global";
import type { Db } from "@/lib/db/transaction";

export type DedupMode = "single" | "partition";

const MODE_TTL_MS = 30_000;

type Cached = { mode: Promise<DedupMode>; at: number; url: string | undefined };
const cache = processGlobal("dedupMode", () => ({ current: undefined as Cached | undefined }));

/** Reads the mode from the catalog (no cache). */
export async function readDedupMode(db?: Db): Promise<DedupMode> {
  const [row] = await query(z.object({ relkind: z.string() }), "SELECT relkind::text AS relkind FROM pg_class WHERE oid = 'dedup_keys'::regclass", [], db);
  return row?.relkind === "p" ? "partition" : "single";
}

/**
 * The cached mode (read at most every 30 s, and again after forgetDedupMode()). Concurrent callers share
 * one read: a burst of claims on a cold process must not take a pool connection each just to ask.
 */
export function dedupMode(): Promise<DedupMode> {
  const c = cache.current;
  const url = process.env.DATABASE_URL;
  if (c && c.url === url && performance.now() - c.at < MODE_TTL_MS) return c.mode;
  const entry: Cached = { mode: readDedupMode(), at: performance.now(), url };
  cache.current = entry;
  // A failed read is not cached: the next caller asks again.
  entry.mode.catch(() => {
    if (cache.current === entry) cache.current = undefined;
  });
  return entry.mode;
}

/** Drops the cached mode: the next dedupMode() reads the catalog. */
export function forgetDedupMode(): void {
  cache.current = undefined;
}

/**
 * True for the errors a statement of the other mode gets: ON CONFLICT (source, event_id) on the
 * partitioned table (42P10: no unique constraint matching it).
 */
export function isModeMismatch(err: unknown): boolean {
  return (err as { code?: string } | undefined)?.code === "42P10";
}
