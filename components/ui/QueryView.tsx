"use client";

import type { ReactNode } from "react";
import { ErrorBox } from "./ErrorBox";
import { Loading } from "./Loading";

/** What QueryView reads of a react-query result (useQuery and useInfiniteQuery both fit). */
export type QueryState<T> = {
  data: T | undefined;
  error: unknown;
  isPending: boolean;
  isError: boolean;
  isFetching: boolean;
  refetch: () => unknown;
};

/**
 * The one way a screen shows a query's states: loading, failed (with the server's error and a retry),
 * empty, or the data. Once data is on screen a failed refresh keeps it, under `stale`'s title when given.
 * Each DataTable passes its words; the table itself only ever sees data.
 */
export function QueryView<T>({
  query,
  loading,
  errorTitle,
  errorHint,
  empty,
  stale,
  children,
}: {
  query: QueryState<T>;
  /** While the first answer is awaited: a sentence (shown by Loading) or a placeholder, or null for nothing. */
  loading: ReactNode;
  /** "The API keys could not be loaded". */
  errorTitle: string;
  /** Extra guidance inside the error box (what usually causes it, that it retries by itself). */
  errorHint?: ReactNode;
  /** The empty state when the data has nothing to show; anything falsy means "not empty". */
  empty?: (data: T) => ReactNode;
  /** A refresh failed while data is on screen: the title of the error shown above it ("Refresh failed: …"). */
  stale?: (data: T) => string;
  children: (data: T) => ReactNode;
}) {
  const { data, error, isPending, isError, isFetching, refetch } = query;
  if (isPending) {
    return typeof loading === "string" ? <Loading>{loading}</Loading> : loading;
  }
  if (data === undefined) {
    return (
      <ErrorBox title={errorTitle} error={error} onRetry={() => void refetch()} retrying={isFetching}>
        {errorHint}
      </ErrorBox>
    );
  }
  const emptyView = empty?.(data);
  return (
    <>
      {isError && stale && <ErrorBox title={stale(data)} error={error} />}
      {emptyView || children(data)}
    </>
  );
}
