/**
 * Failed pruning runs as the Overview states them (a run that ended with an error never reached the
 * console before). From the metrics history's prune-run points of the chosen range, the very points the
 * "Cleanup throughput" chart draws, so the callout and the chart count the same runs. Pure; unit-tested in
 * test/overview/prune-failures.unit.test.ts.
 */
import type { PruneRunPoint } from "@/lib/metrics/schema";

export type PruneFailureSummary = {
  /** The newest finished run failed: pruning is failing now, not just once. */
  failingNow: boolean;
  failed: number;
  of: number;
  latest: { at: string; error: string };
};

/**
 * The failures among a range's prune-run points (any order); null when none failed. For a bucket of
 * runs, `stopped` is its newest run's (null while that one is going): the newest point that has one says
 * whether pruning is failing now.
 */
export function pruneFailureSummary(points: readonly PruneRunPoint[]): PruneFailureSummary | null {
  const newest = [...points].sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt));
  const failed = newest.reduce((n, p) => n + p.failed, 0);
  const latest = newest.find((p) => p.lastError)?.lastError;
  if (failed === 0 || !latest) return null;
  return {
    failingNow: newest.find((p) => p.stopped !== null)?.stopped === "error",
    failed,
    of: newest.reduce((n, p) => n + p.runs, 0),
    latest: { at: latest.at, error: latest.message ?? "no error message was recorded" },
  };
}
