"use client";

import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { replaysQuery } from "./queries";
import { ReplaysTable } from "./ReplaysTable";

/** Loads the recent replays (refreshed every 10 s) and picks what to show. */
export function ReplaysDataTable({ onOpen }: { onOpen: (id: string) => void }) {
  const query = useQuery(replaysQuery());
  return (
    <QueryView
      query={query}
      loading="Loading replays…"
      errorTitle="The replays could not be loaded"
      empty={(page) =>
        page.items.length === 0 && (
          <EmptyState title="No replay yet">
            <p>An operator starts one from the dead letters above: select, preflight, confirm.</p>
          </EmptyState>
        )
      }
    >
      {(page) => (
        <>
          {query.isError && (
            <p className="warn-text" role="status">
              The list may be out of date: the last refresh failed.
            </p>
          )}
          <ReplaysTable replays={page.items} onOpen={onOpen} />
        </>
      )}
    </QueryView>
  );
}
