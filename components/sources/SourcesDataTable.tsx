"use client";

import { useQuery } from "@tanstack/react-query";
import { useCan } from "@/components/auth/SessionProvider";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { sourcesSummary } from "./prepare";
import { sourcesQuery, type PresetItem } from "./queries";
import { SourceCard } from "./SourceCard";

/** Loads the sources and picks what to show: loading, error, none yet, or a card per source. */
export function SourcesDataTable({ presets }: { presets: PresetItem[] | undefined }) {
  const canEdit = useCan("admin");
  const canExtend = useCan("operator");
  const { data, error, isPending, isFetching, refetch } = useQuery(sourcesQuery());
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
  if (data.length === 0) {
    return (
      <EmptyState title="No source yet">
        <p>
          A source is one sender of events, and its keys live for its TTL.{" "}
          {canEdit ? "Create one above." : "An admin creates them, here or with the CLI."}
        </p>
      </EmptyState>
    );
  }
  return (
    <>
      <p className="muted">{sourcesSummary(data)}</p>
      <ul className="source-list">
        {data.map((s) => (
          <li key={s.name}>
            <SourceCard source={s} presets={presets} canEdit={canEdit} canExtend={canExtend} />
          </li>
        ))}
      </ul>
    </>
  );
}
