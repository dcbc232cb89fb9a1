"use client";

import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { apiKeysQuery } from "./queries";
import { ApiKeysTable } from "./ApiKeysTable";

/** Loads the keys and picks what to show: loading, error, none yet, or the table. */
export function ApiKeysDataTable() {
  const { data, error, isPending, isFetching, refetch } = useQuery(apiKeysQuery());
  if (isPending) {
    return (
      <p className="muted" aria-busy="true">
        Loading API keys…
      </p>
    );
  }
  if (!data) {
    return <ErrorBox title="The API keys could not be loaded" error={error} onRetry={() => void refetch()} retrying={isFetching} />;
  }
  if (data.length === 0) {
    return (
      <EmptyState title="No API key yet">
        <p>Services claim events with a key of scope <code>claims:write</code>. Create one above.</p>
      </EmptyState>
    );
  }
  return <ApiKeysTable apiKeys={data} />;
}
