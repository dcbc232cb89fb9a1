"use client";

import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { replaysQuery } from "./queries";
import { ReplaysTable } from "./ReplaysTable";

/** Loads the recent replays (refreshed every 10 s) and picks what to show. */
export function ReplaysDataTable({ onOpen }: { onOpen: (id: string) => void }) {
  const { data, error, isPending, isFetching, isError, refetch } = useQuery(replaysQuery());
  if (isPending) {
    return (
      <p className="muted" aria-busy="true">
        Loading replays…
      </p>
    );
  }
  if (!data) {
    return <ErrorBox title="The replays could not be loaded" error={error} onRetry={() => void refetch()} retrying={isFetching} />;
  }
  if (data.items.length === 0) {
    return (
      <EmptyState title="No replay yet">
        <p>An operator starts one from the dead letters above: select, preflight, confirm.</p>
      </EmptyState>
    );
  }
  return (
    <>
      {isError && (
        <p className="warn-text" role="status">
          The list may be out of date: the last refresh failed.
        </p>
      )}
      <ReplaysTable replays={data.items} onOpen={onOpen} />
    </>
  );
}
