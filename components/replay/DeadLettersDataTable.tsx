"use client";

import { Inbox, ListChecks, RotateCcw, SearchX } from "lucide-react";
import { useInfiniteQuery } from "@tanstack/react-query";
import { useState } from "react";
import { EmptyState } from "@/components/ui/EmptyState";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { LoadMore } from "@/components/ui/LoadMore";
import { QueryView } from "@/components/ui/QueryView";
import { formatCount } from "@/components/ui/format";
import { DeadLetterCounts } from "./DeadLetterCounts";
import { DeadLettersTable } from "./DeadLettersTable";
import { SettleDeadLetters } from "./SettleDeadLetters";
import { hasFilters, type DeadLetterFilters } from "./dead-letter-list";
import { selectionFromChecked, selectionFromFilters, type Selection } from "./wizard";
import { deadLettersQuery } from "./queries";
import styles from "./replay.module.css";
import type { DeadLetter } from "@/lib/deadletters/schema";
import formStyles from "@/components/ui/forms.module.css";
import { clsx } from "clsx";
import tableStyles from "@/components/ui/Table.module.css";
import { Icon } from "@/components/ui/Icon";

/**
 * Loads the dead letters page by page (keyset cursor) and picks what to show; keeps the checked rows and
 * offers operators the two ways into the wizard: every pending one of the filtered source, or the checked.
 */
export function DeadLettersDataTable({
  filters,
  onFilter,
  canOperate,
  onReplay,
}: {
  filters: DeadLetterFilters;
  onFilter: (f: DeadLetterFilters) => void;
  canOperate: boolean;
  onReplay: (s: Selection) => void;
}) {
  const query = useInfiniteQuery(deadLettersQuery(filters));
  const [checked, setChecked] = useState<Map<string, DeadLetter>>(new Map());
  const [refusal, setRefusal] = useState<string | null>(null);
  const toggle = (d: DeadLetter) =>
    setChecked((old) => {
      const next = new Map(old);
      if (next.has(d.id)) next.delete(d.id);
      else next.set(d.id, d);
      return next;
    });
  const start = (r: ReturnType<typeof selectionFromChecked>) => {
    if (!r.ok) return setRefusal(r.error);
    setRefusal(null);
    onReplay(r.selection);
  };
  return (
    <QueryView query={query} loading="Loading dead letters…" errorTitle="The dead letters could not be loaded">
      {(data) => {
        const items = data.pages.flatMap((p) => p.items);
        const counts = data.pages[0].counts;
        return (
          <>
            <DeadLetterCounts counts={counts} filters={filters} onFilter={onFilter} />
            {canOperate && (
              <div className={clsx(tableStyles.rowActions, styles.actions)}>
                <button
                  type="button"
                  className="button button--primary"
                  onClick={() => start(selectionFromFilters(filters))}
                  title={filters.source ? undefined : "Filter by a source first"}
                >
                  <Icon icon={RotateCcw} />
                  {filters.source ? `Replay pending dead letters of ${filters.source}…` : "Replay matching dead letters…"}
                </button>
                <button type="button" className="button" onClick={() => start(selectionFromChecked([...checked.values()]))} disabled={checked.size === 0}>
                  <Icon icon={ListChecks} />
                  Replay checked ({formatCount(checked.size)})…
                </button>
                {refusal && (
                  <p className={formStyles.error} role="alert">
                    {refusal}
                  </p>
                )}
              </div>
            )}
            {canOperate && <SettleDeadLetters filters={filters} checkedIds={[...checked.keys()]} onDone={() => setChecked(new Map())} />}
            {items.length === 0 ? (
              <EmptyState title={hasFilters(filters) ? "No dead letter matches" : "No dead letters"} icon={hasFilters(filters) ? SearchX : Inbox}>
                <p>
                  {hasFilters(filters)
                    ? "Nothing matches these filters; clear them to see every dead letter."
                    : "Dead letters arrive through POST /api/v1/dead-letters (an API key with the deadletters:write scope) from your queue's dead-letter handler."}
                </p>
              </EmptyState>
            ) : (
              <>
                {query.isError && <ErrorBox title="Loading more failed" error={query.error} />}
                <DeadLettersTable items={items} checkable={canOperate} checked={checked} onToggle={toggle} />
                <LoadMore query={query}>
                  {formatCount(items.length)} of {formatCount(counts.total)} dead letter{counts.total === 1 ? "" : "s"} shown
                </LoadMore>
              </>
            )}
          </>
        );
      }}
    </QueryView>
  );
}
