"use client";

import { useRouter, useSearchParams } from "next/navigation";
import { PageHeader } from "@/components/ui/PageHeader";
import { AuditDataTable } from "./AuditDataTable";
import { AuditSearchForm } from "./AuditSearchForm";
import { filtersFromParams } from "./view";
import { eventPath, filterParams } from "./queries";

/** The Audit screen: the search lives in the URL, so a search can be shared and the Back button works. */
export function AuditPage() {
  const router = useRouter();
  const params = useSearchParams();
  const filters = filtersFromParams(params);
  const key = filterParams(filters).toString();
  return (
    <>
      <PageHeader
        title="Audit"
        description="Every claim, completion, release and operator action, kept for months after the dedup key itself is gone. Paste an event id to find out whether, and when, it was processed."
      />
      <AuditSearchForm
        filters={filters}
        onSearch={(f) => router.push(`/audit?${filterParams(f)}`)}
        onLookup={(source, eventId) => router.push(eventPath(source, eventId))}
      />
      <AuditDataTable key={key} filters={filters} />
    </>
  );
}
