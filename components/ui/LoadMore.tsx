"use client";

import { ChevronDown, RefreshCw } from "lucide-react";
import type { ReactNode } from "react";
import styles from "./LoadMore.module.css";
import { Icon } from "./Icon";

/** Under a paged list: how much is shown (`children`), Load more while the server has more, and Refresh. */
export function LoadMore({
  query,
  children,
}: {
  query: { hasNextPage: boolean; isFetching: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown; refetch: () => unknown };
  children: ReactNode;
}) {
  const { hasNextPage, isFetching, isFetchingNextPage } = query;
  return (
    <div className={styles.loadMore}>
      <span className="muted" aria-live="polite">
        {children}
      </span>
      {hasNextPage && (
        <button type="button" className="button" onClick={() => void query.fetchNextPage()} disabled={isFetchingNextPage}>
          <Icon icon={ChevronDown} />
          {isFetchingNextPage ? "Loading…" : "Load more"}
        </button>
      )}
      <button type="button" className="button" onClick={() => void query.refetch()} disabled={isFetching}>
        <Icon icon={RefreshCw} spin={isFetching && !isFetchingNextPage} />
        {isFetching && !isFetchingNextPage ? "Refreshing…" : "Refresh"}
      </button>
    </div>
  );
}
