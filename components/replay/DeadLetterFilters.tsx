"use client";

import { useQuery } from "@tanstack/react-query";
import type { FormEvent } from "react";
import { sourcesQuery } from "@/components/sources/queries";
import { SelectField } from "@/components/ui/SelectField";
import { TextField } from "@/components/ui/TextField";
import { useHydrated } from "@/components/ui/useHydrated";
import { FILTER_STATUSES, hasFilters, type DeadLetterFilters } from "./dead-letter-list";
import { isoToLocalInput, localInputToIso } from "@/components/ui/datetime-input";
import type { DeadLetterStatus } from "@/lib/deadletters/schema";
import formStyles from "@/components/ui/forms.module.css";

const STATUSES = [...FILTER_STATUSES];

/** Narrow the dead letters: source, failed between from and to, error text, status. */
export function DeadLetterFiltersForm({ filters, onChange }: { filters: DeadLetterFilters; onChange: (f: DeadLetterFilters) => void }) {
  const hydrated = useHydrated();
  const sources = useQuery(sourcesQuery());
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const text = (k: string) => String(form.get(k) ?? "").trim();
    const status = text("status") as DeadLetterStatus | "";
    const from = localInputToIso(text("from"));
    const to = localInputToIso(text("to"));
    onChange({
      ...(text("source") ? { source: text("source") } : {}),
      ...(from ? { from } : {}),
      ...(to ? { to } : {}),
      ...(text("errorContains") ? { errorContains: text("errorContains") } : {}),
      ...(status ? { status } : {}),
    });
  };
  // Remount on an outside change (a click on a count), so the inputs show the filters in force.
  const formKey = JSON.stringify(filters);
  const names = sources.data?.map((s) => s.name) ?? [];
  if (filters.source && !names.includes(filters.source)) names.unshift(filters.source);
  return (
    <form className={formStyles.filters} method="get" onSubmit={submit} aria-label="Filter dead letters" key={formKey}>
      <SelectField id="dl-source" name="source" label="Source" options={names} emptyLabel="All sources" defaultValue={filters.source} />
      <TextField id="dl-from" label="Failed from" type="datetime-local" name="from" defaultValue={isoToLocalInput(filters.from)} />
      <TextField id="dl-to" label="Failed until" type="datetime-local" name="to" defaultValue={isoToLocalInput(filters.to)} />
      <TextField
        id="dl-error"
        label="Error contains"
        name="errorContains"
        defaultValue={filters.errorContains ?? ""}
        placeholder="timeout, 503, …"
        autoComplete="off"
        spellCheck={false}
      />
      <SelectField id="dl-status" name="status" label="Status" options={STATUSES} emptyLabel="Any status" defaultValue={filters.status} />
      <div className={formStyles.actions}>
        <button type="submit" className="button" disabled={!hydrated}>
          Filter
        </button>
        {hasFilters(filters) && (
          <button type="button" className="button" onClick={() => onChange({})}>
            Clear filters
          </button>
        )}
      </div>
    </form>
  );
}
