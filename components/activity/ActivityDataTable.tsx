"use client";

import { Inbox, SearchX } from "lucide-react";
import { useInfiniteQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { LoadMore } from "@/components/ui/LoadMore";
import { QueryView } from "@/components/ui/QueryView";
import { ActivityTable } from "./ActivityTable";
import { actionsQuery, type ActionFilters } from "./queries";

/** Loads the log page by page (the server's `next` cursor) and picks what to show. */
export function ActivityDataTable({ filters }: { filters: ActionFilters }) {
  const query = useInfiniteQuery(actionsQuery(filters));
  const filtered = Boolean(filters.actor || filters.action);
  return (
    <QueryView
      query={query}
      loading="Loading the action log…"
      errorTitle="The action log could not be loaded"
      stale={() => "Loading more failed"}
      empty={(data) =>
        data.pages.every((p) => p.items.length === 0) && (
          <EmptyState title={filtered ? "No action matches" : "No action yet"} icon={filtered ? SearchX : Inbox}>
            <p>
              {filtered
                ? "Filters match exactly: an actor reads like user:alice or apikey:billing, an action like user.create."
                : "Sign-ins and every change made in the console, the API or the CLI appear here."}
            </p>
          </EmptyState>
        )
      }
    >
      {(data) => {
        const actions = data.pages.flatMap((p) => p.items);
        return (
          <>
            <ActivityTable actions={actions} />
            <LoadMore query={query}>
              {actions.length} action{actions.length === 1 ? "" : "s"} shown{query.hasNextPage ? "" : ", the oldest included"}
            </LoadMore>
          </>
        );
      }}
    </QueryView>
  );
}
