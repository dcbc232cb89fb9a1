"use client";

import { Download, SearchX } from "lucide-react";
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { QueryView } from "@/components/ui/QueryView";
import { formatDateTime } from "@/components/ui/format";
import { AuditTable } from "./AuditTable";
import { auditSearchQuery, exportUrl, PAGE_SIZE, type AuditPage, type AuditSearchFilters } from "./queries";
import loadMoreStyles from "@/components/ui/LoadMore.module.css";
import { Icon } from "@/components/ui/Icon";

/**
 * Loads one page of a search and pages with the server's keyset cursors: Next follows `next`, Previous
 * goes back along the cursors already used (the API pages one way, newest to oldest). The parent remounts
 * this (key) when the filters change, which starts again at the newest page.
 */
export function AuditDataTable({ filters }: { filters: AuditSearchFilters }) {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1];
  const query = useQuery(auditSearchQuery(filters, cursor));
  const { error, isFetching, isPlaceholderData, refetch } = query;
  const pageNo = cursors.length;
  const range = (data: AuditPage) => (
    <span className="muted">
      {formatDateTime(data.range.from)} – {data.range.to ? formatDateTime(data.range.to) : "now"}
    </span>
  );
  return (
    <QueryView
      query={query}
      loading="Searching the audit history…"
      errorTitle="The audit history could not be searched"
      empty={(data) =>
        data.items.length === 0 &&
        pageNo === 1 && (
          <EmptyState title="No audit row matches" icon={SearchX}>
            <p>
              Searched {range(data)}. Filters match exactly (the event id prefix excepted); widen the time range under More
              filters, or look up one event by its source and id.
            </p>
          </EmptyState>
        )
      }
    >
      {(data) => (
        <>
          {error && <ErrorBox title="Loading that page failed" error={error} onRetry={() => void refetch()} retrying={isFetching} />}
          <div className={loadMoreStyles.loadMore}>
            <span className="muted" aria-live="polite">
              Page {pageNo} · {data.items.length} row{data.items.length === 1 ? "" : "s"} · {range(data)}
            </span>
            <a className="button" href={exportUrl(filters)} download>
              <Icon icon={Download} />
              Export CSV
            </a>
          </div>
          <AuditTable rows={data.items} />
          <nav className={loadMoreStyles.loadMore} aria-label="Pages">
            <button
              type="button"
              className="button"
              onClick={() => setCursors(cursors.slice(0, -1))}
              disabled={pageNo === 1 || isFetching}
            >
              Previous page
            </button>
            <button
              type="button"
              className="button"
              onClick={() => data.next && setCursors([...cursors, data.next])}
              disabled={!data.next || isFetching || isPlaceholderData}
            >
              {isFetching && isPlaceholderData ? "Loading…" : "Next page"}
            </button>
            <span className="muted">
              {data.next ? `${PAGE_SIZE} per page, newest first` : "The oldest matching row is on this page"}
            </span>
          </nav>
        </>
      )}
    </QueryView>
  );
}
