"use client";

import { Segmented } from "@/components/ui/Segmented";
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { PageHeader } from "@/components/ui/PageHeader";
import { ApiError } from "@/components/api";
import type { MetricsRange } from "@/lib/metrics/schema";
import { AdvisorCard } from "./AdvisorCard";
import { DuplicateAgeChart } from "./DuplicateAgeChart";
import { LateDuplicatesTable } from "./LateDuplicatesTable";
import { SourceCharts } from "./SourceCharts";
import { ADVICE_WINDOWS, type AdviceWindow } from "./advisor-prepare";
import { adviceQuery, sourceQuery } from "./advisor-queries";

/**
 * One source's page: the advisor (observed vs configured, the recommendation and its reasons, "apply"
 * for admins), the duplicate-age histogram against the TTL and retry window, the late duplicates, and the
 * source's own charts. Loads the source and its advice; the sections below load their own data.
 */
export function SourcePage({ name, window, range }: { name: string; window: AdviceWindow; range: MetricsRange }) {
  const source = useQuery(sourceQuery(name));
  const advice = useQuery(adviceQuery(name, window));
  const missing = source.error instanceof ApiError && source.error.status === 404;
  return (
    <>
      <PageHeader
        title={name}
        description={
          <>
            Is this source&apos;s key TTL right for the traffic that actually arrives? <Link href="/sources">All sources</Link>
          </>
        }
        aside={
          <Segmented
            label="Advisor window"
            value={window}
            segments={ADVICE_WINDOWS.map((w) => ({ value: w, href: `?window=${w}&range=${range}`, title: `Evidence from the last ${w}` }))}
          />
        }
      />
      {missing ? (
        <ErrorBox title={`No source named “${name}”`} error={source.error}>
          <p>
            <Link href="/sources">See all sources</Link>
          </p>
        </ErrorBox>
      ) : source.isPending ? (
        <p className="muted" aria-busy="true">
          Loading {name}…
        </p>
      ) : !source.data ? (
        <ErrorBox title="The source could not be loaded" error={source.error} onRetry={() => void source.refetch()} retrying={source.isFetching} />
      ) : (
        <>
          <AdvisorCard source={source.data} advice={advice} />
          <h2 className="section-title">Duplicate ages</h2>
          {advice.data ? (
            <DuplicateAgeChart advice={advice.data} retryWindowSeconds={source.data.retryWindowSeconds} />
          ) : (
            <p className="muted">{advice.isPending ? "Loading…" : "The histogram could not be loaded (see above)."}</p>
          )}
          <h2 className="section-title">Late duplicates</h2>
          <LateDuplicatesTable name={name} window={window} />
          <SourceCharts name={name} range={range} window={window} />
        </>
      )}
    </>
  );
}
