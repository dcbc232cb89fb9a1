"use client";

import { FilterX, SearchX } from "lucide-react";
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { Icon } from "@/components/ui/Icon";
import { QueryView } from "@/components/ui/QueryView";
import { replaysQuery, type ReplayListFilter } from "./queries";
import { ReplayListFilterField } from "./ReplayListFilter";
import { ReplaysTable } from "./ReplaysTable";

/** Loads the recent replays (refreshed every 10 s), filtered by state or outcome, and picks what to show. */
export function ReplaysDataTable({ onOpen }: { onOpen: (id: string) => void }) {
  const [filter, setFilter] = useState<ReplayListFilter>({});
  const query = useQuery(replaysQuery(filter));
  const filtered = Boolean(filter.state || filter.outcome);
  return (
    <>
      <ReplayListFilterField filter={filter} onChange={setFilter} />
      <QueryView
        query={query}
        loading="Loading replays…"
        errorTitle="The replays could not be loaded"
        empty={(page) =>
          page.items.length === 0 &&
          (filtered ? (
            <EmptyState title={`No ${filter.outcome ?? filter.state} replay`} icon={SearchX}>
              <p>None of the recent replays matches this filter.</p>
              <button type="button" className="button" onClick={() => setFilter({})}>
                <Icon icon={FilterX} />
                Clear filter
              </button>
            </EmptyState>
          ) : (
            <EmptyState title="No replay yet">
              <p>An operator starts one from the dead letters above: select, preflight, confirm.</p>
            </EmptyState>
          ))
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
    </>
  );
}
