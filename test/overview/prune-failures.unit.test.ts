/** The Overview's statement about failed pruning runs (components/overview/prune-failures.ts). Pure. */
import { describe, expect, it } from "vitest";
import { pruneFailureSummary } from "@/components/overview/prune-failures";
import type { PruneRunPoint } from "@/lib/metrics/schema";

const NOW = Date.parse("2026-12-05T12:00:00Z");
const at = (minutesAgo: number) => new Date(NOW - minutesAgo * 60_000).toISOString();
/** One run as the metrics history lists it at minute steps. */
const run = (minutesAgo: number, stopped: string | null, error: string | null = null): PruneRunPoint => ({
  startedAt: at(minutesAgo),
  finishedAt: stopped ? new Date(NOW - minutesAgo * 60_000 + 500).toISOString() : null,
  rows: 10,
  batches: 1,
  rowsPerSecond: stopped ? 20 : null,
  stopped,
  runs: 1,
  failed: stopped === "error" ? 1 : 0,
  lastError: stopped === "error" ? { at: at(minutesAgo), message: error } : null,
});

describe("pruneFailureSummary", () => {
  it("is null when no run of the range failed", () => {
    expect(pruneFailureSummary([run(1, "drained"), run(2, "time_budget")])).toBeNull();
    expect(pruneFailureSummary([])).toBeNull();
  });

  it("counts the failures among all the range's runs, names the latest error, and says whether the newest finished run failed", () => {
    // Oldest first, as the history lists them: the order does not matter.
    const s = pruneFailureSummary([run(3, "error", "disk full"), run(2, "drained"), run(1, "error", "statement timeout"), run(0, null)]);
    expect(s).toEqual({ failingNow: true, failed: 2, of: 4, latest: { at: at(1), error: "statement timeout" } });
    const recovered = pruneFailureSummary([run(2, "error", "disk full"), run(1, "drained")]);
    expect(recovered?.failingNow).toBe(false);
    expect(pruneFailureSummary([run(1, "error", null)])?.latest.error).toBe("no error message was recorded");
  });

  it("counts every run of a bucketed range, past 200 (per-minute pruning: 1,440 runs a day)", () => {
    // A day at 15-minute buckets: 96 buckets of 15 runs, one failure each.
    const buckets: PruneRunPoint[] = Array.from({ length: 96 }, (_, i) => ({
      ...run(15 * (96 - i), "drained"),
      runs: 15,
      failed: 1,
      lastError: { at: at(15 * (96 - i) - 3), message: `failure ${i}` },
    }));
    const s = pruneFailureSummary(buckets);
    expect(s).toMatchObject({ failingNow: false, failed: 96, of: 1440, latest: { error: "failure 95" } });
  });
});
