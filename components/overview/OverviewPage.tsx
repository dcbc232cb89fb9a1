"use client";

import { useQuery } from "@tanstack/react-query";
import { PageHeader } from "@/components/ui/PageHeader";
import { RefreshStatus } from "@/components/ui/RefreshStatus";
import type { MetricsRange } from "@/lib/metrics/schema";
import { OVERVIEW_REFRESH_MS, overviewQuery } from "./queries";
import { MetricsPanel } from "./MetricsPanel";
import { PruneFailures } from "./PruneFailures";
import { OverviewDataTable } from "./OverviewDataTable";
import { InletLag } from "./InletLag";

export function OverviewPage({ range, source = null }: { range: MetricsRange; source?: string | null }) {
  // Same query as the data table (one request, shared cache); read here only for the freshness line.
  const { data, isFetching, isError, refetch } = useQuery(overviewQuery());
  return (
    <>
      <PageHeader
        title="Overview"
        description="Live dedup keys and claim outcomes per source; the dedup table's size, backlog and cleanup over time."
        aside={
          <RefreshStatus
            asOf={data?.asOf}
            everySeconds={OVERVIEW_REFRESH_MS / 1000}
            fetching={isFetching}
            stale={isError}
            onRefresh={() => void refetch()}
          />
        }
      />
      <PruneFailures range={range} source={source} />
      <OverviewDataTable />
      <InletLag />
      <MetricsPanel range={range} source={source} />
    </>
  );
}
