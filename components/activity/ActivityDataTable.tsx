"use client";

import { useInfiniteQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { ActivityTable } from "./ActivityTable";
import { actionsQuery, type ActionFilters } from "./queries";

/** Loads the log page by page (the server's `next` cursor) and picks what to show. */
export function ActivityDataTable({ filters }: { filters: ActionFilters }) {
  const { data, error, isPending, isFetching, isFetchingNextPage, isError, hasNextPage, fetchNextPage, refetch } = useInfiniteQuery(
    actionsQuery(filters),
  );
  if (isPending) {
    return (
      <p className="muted" aria-busy="true">
        Loading the action log…
      </p>
    );
  }
  if (!data) {
    return <ErrorBox title="The action log could not be loaded" error={error} onRetry={() => void refetch()} retrying={isFetching} />;
  }
  const actions = data.pages.flatMap((p) => p.items);
  if (actions.length === 0) {
    return (
      <EmptyState title={filters.actor || filters.action ? "No action matches" : "No action yet"}>
        <p>
          {filters.actor || filters.action
            ? "Filters match exactly: an actor reads like user:alice or apikey:billing, an action like user.create."
            : "Sign-ins and every change made in the console, the API or the CLI appear here."}
        </p>
      </EmptyState>
    );
  }
  return (
    <>
      {isError && <ErrorBox title="Loading more failed" error={error} />}
      <ActivityTable actions={actions} />
      <div className="load-more">
        <span className="muted" aria-live="polite">
          {actions.length} action{actions.length === 1 ? "" : "s"} shown{hasNextPage ? "" : ", the oldest included"}
        </span>
        {hasNextPage && (
          <button type="button" className="button" onClick={() => void fetchNextPage()} disabled={isFetchingNextPage}>
            {isFetchingNextPage ? "Loading…" : "Load more"}
          </button>
        )}
        <button type="button" className="button" onClick={() => void refetch()} disabled={isFetching}>
          {isFetching && !isFetchingNextPage ? "Refreshing…" : "Refresh"}
        </button>
      </div>
    </>
  );
}
