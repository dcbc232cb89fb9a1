"use client";

import { useQuery } from "@tanstack/react-query";
import { formatDateTime } from "@/components/ui/format";
import type { MetricsRange } from "@/lib/metrics/schema";
import { metricsQuery } from "./queries";
import { RANGE_LABELS } from "./RangePicker";
import { pruneFailureSummary } from "./prune-failures";
import calloutStyles from "@/components/ui/Callout.module.css";
import { clsx } from "clsx";

/**
 * A callout when pruning runs failed in the chosen range: how many of the range's runs, the latest error,
 * and whether the newest run failed too (then expired keys pile up: see the backlog). It reads the charts'
 * own metrics query (the same cache entry), so it counts exactly the runs "Cleanup throughput" draws.
 */
export function PruneFailures({ range, source = null }: { range: MetricsRange; source?: string | null }) {
  const { data } = useQuery(metricsQuery(range, source));
  const s = data ? pruneFailureSummary(data.pruneRuns) : null;
  if (!s) return null;
  return (
    <div className={clsx(calloutStyles.callout, s.failingNow ? calloutStyles.error : calloutStyles.warn)} role="status" data-testid="prune-failures">
      <div className={calloutStyles.title}>
        {s.failingNow ? "Pruning is failing" : "Pruning failed"}: {s.failed} of the {s.of} run{s.of === 1 ? "" : "s"} in the last {RANGE_LABELS[range]} ended with an
        error
      </div>
      <p className={calloutStyles.body}>
        Latest at {formatDateTime(s.latest.at, true)}: <span className="mono">{s.latest.error}</span>.{" "}
        {s.failingNow
          ? "Expired keys are not being deleted: the expiry backlog below grows until a run succeeds."
          : "Later runs succeeded and caught up."}{" "}
        The server log has every failure; <code>npx keyward prune</code> runs one now.
      </p>
    </div>
  );
}
