"use client";

import { useState } from "react";
import { PageHeader } from "@/components/ui/PageHeader";
import { ActivityDataTable } from "./ActivityDataTable";
import { ActivityFilters } from "./ActivityFilters";
import type { ActionFilters } from "./queries";

export function ActivityPage() {
  const [filters, setFilters] = useState<ActionFilters>({});
  return (
    <>
      <PageHeader
        title="Activity"
        description="The operator action log: every sign-in, every change to users, API keys and sources, and every action on keys, by whom, from where, newest first."
      />
      <ActivityFilters filters={filters} onChange={setFilters} />
      <ActivityDataTable filters={filters} />
    </>
  );
}
