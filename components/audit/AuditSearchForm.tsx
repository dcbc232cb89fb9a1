"use client";

import { Search } from "lucide-react";
import type { FormEvent } from "react";
import { useQuery } from "@tanstack/react-query";
import { sourcesQuery } from "@/components/sources/queries";
import { SelectField } from "@/components/ui/SelectField";
import { TextField } from "@/components/ui/TextField";
import { useHydrated } from "@/components/ui/useHydrated";
import { isoToLocalInput, KNOWN_AUDIT_KINDS, localInputToIso } from "./view";
import type { AuditSearchFilters } from "./queries";
import styles from "./audit.module.css";
import { clsx } from "clsx";
import formStyles from "@/components/ui/forms.module.css";
import panelStyles from "@/components/ui/Panel.module.css";
import { Icon } from "@/components/ui/Icon";

/**
 * The audit search. The event id comes first: with a source too, submitting goes straight to that event's
 * page ("did we process it?"); otherwise it searches. The other filters narrow a search; from/to are local
 * times (the API defaults to the last 30 days, or the whole retention for an exact event id).
 */
export function AuditSearchForm({
  filters,
  onSearch,
  onLookup,
}: {
  filters: AuditSearchFilters;
  onSearch: (f: AuditSearchFilters) => void;
  onLookup: (source: string, eventId: string) => void;
}) {
  const hydrated = useHydrated();
  const sources = useQuery(sourcesQuery());
  const names = sources.data?.map((s) => s.name) ?? [];
  if (filters.source && !names.includes(filters.source)) names.unshift(filters.source);

  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const text = (name: string) => String(form.get(name) ?? "").trim() || undefined;
    const f: AuditSearchFilters = {
      eventId: text("eventId"),
      source: text("source"),
      eventIdPrefix: text("eventIdPrefix"),
      eventType: text("eventType"),
      kind: text("kind"),
      actor: text("actor"),
      from: localInputToIso(String(form.get("from") ?? "")),
      to: localInputToIso(String(form.get("to") ?? "")),
    };
    if (f.source && f.eventId) return onLookup(f.source, f.eventId);
    onSearch(Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined)) as AuditSearchFilters);
  };
  const k = JSON.stringify(filters); // re-seed the uncontrolled inputs when the URL's filters change

  return (
    <form className={clsx(panelStyles.panel, styles.search)} method="get" onSubmit={submit} aria-label="Search the audit history" key={k}>
      <div className={styles.lookup}>
        <TextField
          id="audit-event-id"
          label="Event id"
          className={styles.eventField}
          inputClassName="input--wide mono"
          name="eventId"
          defaultValue={filters.eventId ?? ""}
          placeholder="Paste an event id, e.g. evt_1Nq…"
          autoComplete="off"
          spellCheck={false}
          autoFocus
        />
        <SelectField id="audit-source" name="source" label="Source" options={names} emptyLabel="Any source" defaultValue={filters.source} />
        <div className={formStyles.actions}>
          <button type="submit" className="button button--primary" disabled={!hydrated}>
            <Icon icon={Search} />
            Search
          </button>
        </div>
      </div>
      <p className={clsx(formStyles.hint, formStyles.hintWide)}>
        With a source and an event id, Search opens that event&apos;s page: whether it was processed, when, and what became of its key.
      </p>
      <details className={styles.more} open={Boolean(filters.eventIdPrefix || filters.eventType || filters.kind || filters.actor || filters.from || filters.to)}>
        <summary>More filters</summary>
        <div className={formStyles.filters}>
          <TextField id="audit-prefix" label="Event id starts with" inputClassName="mono" name="eventIdPrefix" defaultValue={filters.eventIdPrefix ?? ""} autoComplete="off" spellCheck={false} />
          <TextField id="audit-type" label="Event type" inputClassName="mono" name="eventType" defaultValue={filters.eventType ?? ""} placeholder="invoice.paid" autoComplete="off" spellCheck={false} />
          <TextField id="audit-kind" label="Kind" inputClassName="mono" name="kind" list="audit-kinds" defaultValue={filters.kind ?? ""} placeholder="claimed, released, …" autoComplete="off" spellCheck={false} />
          <datalist id="audit-kinds">
            {KNOWN_AUDIT_KINDS.map((kind) => (
              <option key={kind} value={kind} />
            ))}
          </datalist>
          <TextField id="audit-actor" label="Actor" inputClassName="mono" name="actor" defaultValue={filters.actor ?? ""} placeholder="apikey:billing, user:alice" autoComplete="off" spellCheck={false} />
          <TextField id="audit-from" label="From" type="datetime-local" name="from" defaultValue={isoToLocalInput(filters.from)} />
          <TextField id="audit-to" label="To" type="datetime-local" name="to" defaultValue={isoToLocalInput(filters.to)} />
        </div>
      </details>
    </form>
  );
}
