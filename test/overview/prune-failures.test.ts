/** The Overview's statement about failed pruning runs (components/overview/prune-failures.ts). Pure. */
import { describe, expect, it } from "vitest";
import { pruneFailureSummary } from "../../components/overview/prune-failures";
import type { PruneRunRecord } from "../../lib/retention/prune-schema";

const NOW = Date.parse("2026-12-05T12:00:00Z");
const run = (minutesAgo: number, stopped: PruneRunRecord["stopped"], error: string | null = null): PruneRunRecord => ({
  id: String(minutesAgo),
  startedAt: new Date(NOW - minutesAgo * 60_000).toISOString(),
  finishedAt: stopped ? new Date(NOW - minutesAgo * 60_000 + 500).toISOString() : null,
  mode: "batch",
  trigger: "schedule",
  actor: null,
  batches: 1,
  rows: 10,
  partitionsDropped: 0,
  stopped,
  error,
  durationMs: 500,
  rowsPerSecond: 20,
});

describe("pruneFailureSummary", () => {
  it("is null when no run of the last 24 hours failed (an older failure does not count)", () => {
    expect(pruneFailureSummary([run(1, "drained"), run(2, "time_budget"), run(25 * 60, "error", "old")], NOW)).toBeNull();
  });

  it("counts the failures, names the latest error, and says whether the newest finished run failed", () => {
    const s = pruneFailureSummary([run(0, null), run(1, "error", "statement timeout"), run(2, "drained"), run(3, "error", "disk full")], NOW);
    expect(s).toEqual({ failingNow: true, failed: 2, of: 4, latest: { at: new Date(NOW - 60_000).toISOString(), error: "statement timeout" } });
    const recovered = pruneFailureSummary([run(1, "drained"), run(2, "error", "disk full")], NOW);
    expect(recovered?.failingNow).toBe(false);
  });
});
