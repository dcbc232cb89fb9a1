"use client";

import type { FormEvent } from "react";
import { TextField } from "@/components/ui/TextField";
import { useHydrated } from "@/components/ui/useHydrated";
import { KNOWN_ACTIONS, type ActionFilters } from "./queries";
import formStyles from "@/components/ui/forms.module.css";

/** Narrow the log to one actor and/or one action (exact matches, as the server filters). */
export function ActivityFilters({ filters, onChange }: { filters: ActionFilters; onChange: (f: ActionFilters) => void }) {
  const hydrated = useHydrated();
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const actor = String(form.get("actor") ?? "").trim();
    const action = String(form.get("action") ?? "").trim();
    onChange({ ...(actor ? { actor } : {}), ...(action ? { action } : {}) });
  };
  const active = Boolean(filters.actor || filters.action);
  return (
    <form className={formStyles.filters} method="get" onSubmit={submit} aria-label="Filter the action log">
      <TextField
        id="filter-actor"
        label="Actor"
        name="actor"
        key={`actor-${filters.actor ?? ""}`}
        defaultValue={filters.actor ?? ""}
        placeholder="user:alice, apikey:billing, anonymous"
        autoComplete="off"
        spellCheck={false}
      />
      <TextField
        id="filter-action"
        label="Action"
        name="action"
        key={`action-${filters.action ?? ""}`}
        defaultValue={filters.action ?? ""}
        list="known-actions"
        placeholder="sign_in, user.create, …"
        autoComplete="off"
        spellCheck={false}
      />
      <datalist id="known-actions">
        {KNOWN_ACTIONS.map((a) => (
          <option key={a} value={a} />
        ))}
      </datalist>
      <div className={formStyles.actions}>
        <button type="submit" className="button" disabled={!hydrated}>
          Filter
        </button>
        {active && (
          <button type="button" className="button" onClick={() => onChange({})}>
            Clear filters
          </button>
        )}
      </div>
    </form>
  );
}
