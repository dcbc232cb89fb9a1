"use client";

import { useQuery } from "@tanstack/react-query";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { formatClockTime } from "@/components/ui/format";
import { overviewQuery } from "@/lib/overview/queries";
import { NoSources } from "./NoSources";
import { SourceSettingsTable } from "./SourceSettingsTable";

/**
 * The Sources screen's list. Until the Sources issue brings its own route and lib/sources, it reads the
 * overview response, which already carries every source's settings (and shares the Overview's cache).
 */
export function SourceSettingsDataTable() {
  const { data, error, isPending, isError, isFetching, refetch } = useQuery(overviewQuery());
  if (isPending) {
    return (
      <p className="muted" aria-busy="true">
        Loading sources…
      </p>
    );
  }
  if (!data) {
    return <ErrorBox title="The sources could not be loaded" error={error} onRetry={() => void refetch()} retrying={isFetching} />;
  }
  return (
    <>
      {isError && <ErrorBox title={`Refresh failed: this list is from ${formatClockTime(data.asOf)}`} error={error} />}
      {data.sources.length === 0 ? <NoSources /> : <SourceSettingsTable sources={data.sources} />}
    </>
  );
}
