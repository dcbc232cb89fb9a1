"use client";

import { Segmented } from "@/components/ui/Segmented";
import Link from "next/link";
import { useQuery } from "@tanstack/react-query";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { PageHeader } from "@/components/ui/PageHeader";
import { ApiError } from "@/components/api";
import type { MetricsRange } from "@/lib/metrics/schema";
import { useCan } from "@/components/auth/SessionProvider";
import { AdvisorCard } from "./AdvisorCard";
import { ExtendLiveKeys } from "./ExtendLiveKeys";
import { DuplicateAgeChart } from "./DuplicateAgeChart";
import { LateDuplicatesTable } from "./LateDuplicatesTable";
import { SourceCharts } from "./SourceCharts";
import { ADVICE_WINDOWS, type AdviceWindow } from "./advisor-view";
import { adviceQuery, sourceQuery } from "./advisor-queries";
import textStyles from "@/components/ui/text.module.css";
import { Loading } from "@/components/ui/Loading";

/**
 * One source's page: the advisor (observed vs configured, the recommendation and its reasons, "apply"
 * for admins), the duplicate-age histogram against the TTL and retry window, the late duplicates, and the
 * source's own charts, and "Extend live keys" for operators (where the advisor sends people). Loads the source and its advice; the sections below load their own data.
 */
export function SourcePage({ name, window, range }: { name: string; window: AdviceWindow; range: MetricsRange }) {
  const source = useQuery(sourceQuery(name));
  const advice = useQuery(adviceQuery(name, window));
  const missing = source.error instanceof ApiError && source.error.status === 404;
  const canExtend = useCan("operator");
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
        <Loading>Loading {name}…</Loading>
      ) : !source.data ? (
        <ErrorBox title="The source could not be loaded" error={source.error} onRetry={() => void source.refetch()} retrying={source.isFetching} />
      ) : (
        <>
          <AdvisorCard source={source.data} advice={advice} />
          {canExtend && (
            // Where the advisor sends people after a TTL change: live keys keep the expiry they were claimed with.
            <section className={textStyles.note} aria-label="Live keys">
              <p className="muted small">
                Live keys keep the expiry they were claimed with; after raising the TTL, extend them to it (never shortens).
              </p>
              <ExtendLiveKeys source={source.data} />
            </section>
          )}
          <h2 className={textStyles.sectionTitle}>Duplicate ages</h2>
          {advice.data ? (
            <DuplicateAgeChart advice={advice.data} retryWindowSeconds={source.data.retryWindowSeconds} />
          ) : (
            <p className="muted">{advice.isPending ? "Loading…" : "The histogram could not be loaded (see above)."}</p>
          )}
          <h2 className={textStyles.sectionTitle} id="late-duplicates">
            Late duplicates
          </h2>
          <LateDuplicatesTable name={name} window={window} />
          <SourceCharts name={name} range={range} window={window} />
        </>
      )}
    </>
  );
}
