"use client";

import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { QueryView } from "@/components/ui/QueryView";
import { apiKeysQuery } from "./queries";
import { ApiKeysTable } from "./ApiKeysTable";

/** Loads the keys and picks what to show: loading, error, none yet, or the table. */
export function ApiKeysDataTable() {
  const query = useQuery(apiKeysQuery());
  return (
    <QueryView
      query={query}
      loading="Loading API keys…"
      errorTitle="The API keys could not be loaded"
      empty={(keys) =>
        keys.length === 0 && (
          <EmptyState title="No API key yet">
            <p>Services claim events with a key of scope <code>claims:write</code>. Create one above.</p>
          </EmptyState>
        )
      }
    >
      {(keys) => <ApiKeysTable apiKeys={keys} />}
    </QueryView>
  );
}
