/**
 * Failed pruning runs as the Overview states them (a run that ended with an error never reached the
 * console before). Pure; unit-tested in test/overview/prune-failures.test.ts.
 */
import type { PruneRunRecord } from "@/lib/retention/prune-schema";

export type PruneFailureSummary = {
  /** The latest run failed: pruning is failing now, not just once. */
  failingNow: boolean;
  failed: number;
  of: number;
  latest: { at: string; error: string };
};

/** The failures among `runs` (newest first) that started within `withinMs` of `now`; null when none. */
export function pruneFailureSummary(runs: readonly PruneRunRecord[], now: number, withinMs = 24 * 3600_000): PruneFailureSummary | null {
  const recent = runs.filter((r) => now - Date.parse(r.startedAt) <= withinMs);
  const failed = recent.filter((r) => r.stopped === "error");
  if (failed.length === 0) return null;
  const finished = recent.filter((r) => r.finishedAt !== null);
  return {
    failingNow: finished[0]?.stopped === "error",
    failed: failed.length,
    of: recent.length,
    latest: { at: failed[0].startedAt, error: failed[0].error ?? "no error message was recorded" },
  };
}
