/** Client side of the audit history (GET /api/v1/audit, /api/v1/events/…): keys, queries, URLs. */
import { keepPreviousData, queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError } from "@/components/api";
import type { AuditPage, AuditRow, EventAnswer } from "@/lib/audit/schema";

export type { AuditPage, AuditRow, EventAnswer };

/** The search form's filters, as the API takes them (every field optional; from/to ISO instants). */
export type AuditSearchFilters = {
  source?: string;
  eventId?: string;
  eventIdPrefix?: string;
  eventType?: string;
  kind?: string;
  actor?: string;
  from?: string;
  to?: string;
};

export const FILTER_FIELDS = ["source", "eventId", "eventIdPrefix", "eventType", "kind", "actor", "from", "to"] as const;

export const PAGE_SIZE = 50;

export const auditKeys = {
  all: ["audit"] as const,
  search: (filters: AuditSearchFilters, cursor: string | null) => [...auditKeys.all, "search", filters, cursor] as const,
  event: (source: string, eventId: string) => [...auditKeys.all, "event", source, eventId] as const,
};

export function filterParams(filters: AuditSearchFilters): URLSearchParams {
  const params = new URLSearchParams();
  for (const f of FILTER_FIELDS) if (filters[f]) params.set(f, filters[f]!);
  return params;
}

/** The CSV download of the same search (every matching row, not just the page on screen). */
export function exportUrl(filters: AuditSearchFilters): string {
  return `/api/v1/audit/export?${filterParams(filters)}`;
}

export function eventPath(source: string, eventId: string): string {
  return `/events/${encodeURIComponent(source)}/${encodeURIComponent(eventId)}`;
}

export function auditSearchQuery(filters: AuditSearchFilters, cursor: string | null) {
  return queryOptions({
    queryKey: auditKeys.search(filters, cursor),
    queryFn: ({ signal }) => {
      const params = filterParams(filters);
      params.set("limit", String(PAGE_SIZE));
      if (cursor) params.set("cursor", cursor);
      return api<AuditPage>(`/api/v1/audit?${params}`, { signal });
    },
    placeholderData: keepPreviousData,
    retry: retryUnlessClientError,
  });
}

export function eventQuery(source: string, eventId: string) {
  return queryOptions({
    queryKey: auditKeys.event(source, eventId),
    queryFn: ({ signal }) =>
      api<EventAnswer>(`/api/v1/events/${encodeURIComponent(source)}/${encodeURIComponent(eventId)}`, { signal }),
    retry: retryUnlessClientError,
  });
}
