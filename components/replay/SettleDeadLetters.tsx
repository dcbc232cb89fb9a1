"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api } from "@/components/api";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { TextField } from "@/components/ui/TextField";
import { formatCount } from "@/components/ui/format";
import type { BulkResult, DeadLetterList } from "@/lib/deadletters/schema";
import { filterParams, type DeadLetterFilters } from "./dead-letter-list";
import { replayKeys } from "./queries";
import panelStyles from "@/components/ui/Panel.module.css";
import formStyles from "@/components/ui/forms.module.css";

/** The discard reason's minimum (lib/deadletters/schema.ts MIN_DISCARD_REASON; the server refuses shorter). */
const MIN_REASON = 10;

type Scope = { kind: "ids"; ids: string[] } | { kind: "filter"; source: string; failedSince?: string; failedUntil?: string; error?: string };

/**
 * Operators: discard (with a reason) or mark resolved the checked dead letters, or every pending one of
 * the filtered source that failed since the From filter, in one step. Either way the count is read first
 * and typed back (sent as expectedCount, so the server refuses if it changed meanwhile).
 */
export function SettleDeadLetters({ filters, checkedIds, onDone }: { filters: DeadLetterFilters; checkedIds: string[]; onDone: () => void }) {
  const queryClient = useQueryClient();
  const [open, setOpen] = useState(false);
  const [action, setAction] = useState<"discard" | "resolve">("discard");
  const [useFilter, setUseFilter] = useState(checkedIds.length === 0);
  const [reason, setReason] = useState("");
  const [typed, setTyped] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const scope: Scope | null =
    useFilter && filters.source
      ? {
          kind: "filter",
          source: filters.source,
          ...(filters.from ? { failedSince: filters.from } : {}),
          ...(filters.to ? { failedUntil: filters.to } : {}),
          ...(filters.errorContains ? { error: filters.errorContains } : {}),
        }
      : !useFilter && checkedIds.length > 0
        ? { kind: "ids", ids: checkedIds }
        : null;
  const count = useMutation({
    mutationFn: async (s: Scope) => {
      if (s.kind === "ids") return s.ids.length;
      const q = filterParams({ source: s.source, from: s.failedSince, to: s.failedUntil, errorContains: s.error, status: "pending" }, { limit: "1" });
      return (await api<DeadLetterList>(`/api/v1/dead-letters?${q}`)).counts.total;
    },
  });
  const settle = useMutation({
    mutationFn: (s: Scope) => {
      const selection = s.kind === "ids" ? { ids: s.ids } : { filter: { source: s.source, failedSince: s.failedSince, failedUntil: s.failedUntil, error: s.error } };
      const body = { ...selection, ...(s.kind === "filter" ? { expectedCount: count.data } : {}), ...(reason.trim() ? { reason: reason.trim() } : {}) };
      return api<BulkResult>(`/api/v1/dead-letters/${action}`, { method: "POST", body });
    },
    onSuccess: (r) => {
      const n = "discarded" in r ? r.discarded : r.resolved;
      setDone(`${formatCount(n)} dead letter${n === 1 ? "" : "s"} ${action === "discard" ? "discarded" : "marked resolved"}${r.skipped.length ? ` (${r.skipped.length} not pending, left as they were)` : ""}.`);
      setOpen(false);
      setTyped("");
      count.reset();
      onDone();
      void queryClient.invalidateQueries({ queryKey: replayKeys.all });
    },
  });
  if (!open) {
    return (
      <>
        <button type="button" className="button" onClick={() => (setOpen(true), setDone(null), setUseFilter(checkedIds.length === 0))}>
          Discard or resolve…
        </button>
        {done && (
          <p className="muted small" role="status">
            {done}
          </p>
        )}
      </>
    );
  }
  const reasonOk = action === "resolve" || reason.trim().length >= MIN_REASON;
  const confirmed = count.data !== undefined && typed.trim() === String(count.data);
  return (
    <fieldset className={panelStyles.panel} aria-label="Discard or resolve dead letters">
      <legend>Discard or resolve dead letters</legend>
      <p>
        <label>
          <input type="radio" name="settle-action" checked={action === "discard"} onChange={() => setAction("discard")} /> Discard (give up: never
          replayed)
        </label>{" "}
        <label>
          <input type="radio" name="settle-action" checked={action === "resolve"} onChange={() => setAction("resolve")} /> Mark resolved (handled
          outside Keyward)
        </label>
      </p>
      <p>
        <label>
          <input type="radio" name="settle-scope" checked={!useFilter} disabled={checkedIds.length === 0} onChange={() => (setUseFilter(false), count.reset())} />{" "}
          the {formatCount(checkedIds.length)} checked
        </label>{" "}
        <label>
          <input type="radio" name="settle-scope" checked={useFilter} disabled={!filters.source} onChange={() => (setUseFilter(true), count.reset())} />{" "}
          {filters.source
            ? `every pending dead letter of ${filters.source}${filters.from ? ` that failed since ${filters.from}` : ""}${filters.to ? ` until ${filters.to}` : ""}${filters.errorContains ? ` with “${filters.errorContains}”` : ""}`
            : "every pending one of a source (filter by a source, and From for “since”)"}
        </label>
      </p>
      <TextField
        id="settle-reason"
        label={action === "discard" ? `Reason (at least ${MIN_REASON} characters)` : "Reason (optional)"}
        value={reason}
        onChange={(e) => setReason(e.target.value)}
        maxLength={1000}
      />
      {count.data === undefined ? (
        <div className={formStyles.actions}>
          <button type="button" className="button" disabled={!scope || !reasonOk || count.isPending} onClick={() => scope && count.mutate(scope)}>
            {count.isPending ? "Counting…" : "Count them"}
          </button>
          <button type="button" className="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <>
          <TextField
            id="settle-count"
            label={`Type ${count.data} to ${action === "discard" ? "discard" : "resolve"} ${formatCount(count.data)} dead letter${count.data === 1 ? "" : "s"}`}
            value={typed}
            onChange={(e) => setTyped(e.target.value)}
            inputMode="numeric"
            autoComplete="off"
          />
          <div className={formStyles.actions}>
            <button
              type="button"
              className={action === "discard" ? "button button--danger" : "button button--primary"}
              disabled={!confirmed || !reasonOk || settle.isPending || !scope}
              onClick={() => scope && settle.mutate(scope)}
            >
              {action === "discard" ? "Discard" : "Mark resolved"} {formatCount(count.data)}
            </button>
            <button type="button" className="button" onClick={() => (count.reset(), setTyped(""))}>
              Back
            </button>
          </div>
        </>
      )}
      {count.isError && <ErrorBox title="The dead letters could not be counted" error={count.error} />}
      {settle.isError && <ErrorBox title="Nothing changed" error={settle.error} />}
    </fieldset>
  );
}
