"use client";

import { useQuery } from "@tanstack/react-query";
import { formatDateTime } from "@/components/ui/format";
import { api, retryUnlessClientError } from "@/components/api";
import type { PruneRunRecord } from "@/lib/retention/prune-schema";
import { pruneFailureSummary } from "./prune-failures";

/**
 * A callout when pruning runs failed in the last 24 hours (GET /api/v1/maintenance/prune): how many,
 * the latest error, and whether the newest run failed too (then expired keys pile up: see the backlog).
 */
export function PruneFailures() {
  const { data } = useQuery({
    queryKey: ["maintenance", "prune-runs"],
    queryFn: ({ signal }) => api<{ runs: PruneRunRecord[] }>("/api/v1/maintenance/prune?limit=200", { signal }),
    refetchInterval: 60_000,
    retry: retryUnlessClientError,
  });
  const s = data ? pruneFailureSummary(data.runs, Date.now()) : null;
  if (!s) return null;
  return (
    <div className={`callout ${s.failingNow ? "callout--error" : "callout--warn"}`} role="status" data-testid="prune-failures">
      <div className="callout__title">
        {s.failingNow ? "Pruning is failing" : "Pruning failed"}: {s.failed} of the last {s.of} run{s.of === 1 ? "" : "s"} ended with an error
      </div>
      <p className="callout__body">
        Latest at {formatDateTime(s.latest.at, true)}: <span className="mono">{s.latest.error}</span>.{" "}
        {s.failingNow
          ? "Expired keys are not being deleted: the expiry backlog below grows until a run succeeds."
          : "Later runs succeeded and caught up."}{" "}
        The server log has every failure; <code>npx keyward prune</code> runs one now.
      </p>
    </div>
  );
}
