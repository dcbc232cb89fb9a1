"use client";

import { formatCount } from "@/components/ui/format";
import { countRows, type DeadLetterFilters } from "./prepare";
import type { DeadLetterList } from "@/lib/deadletters/schema";

type Counts = DeadLetterList["counts"];

/** Counts by source and by error within the filters; a click on one narrows the list to it. */
export function DeadLetterCounts({
  counts,
  filters,
  onFilter,
}: {
  counts: Counts;
  filters: DeadLetterFilters;
  onFilter: (f: DeadLetterFilters) => void;
}) {
  const bySource = countRows(
    counts.bySource.map((s) => ({ key: s.source, count: s.count })),
    counts.total,
  );
  const byError = countRows(
    counts.byError.map((e) => ({ key: e.error, count: e.count })),
    counts.total,
  );
  if (counts.total === 0) return null;
  return (
    <div className="dl-counts">
      <section className="dl-counts__group" aria-labelledby="dl-by-source">
        <h3 className="source-card__subtitle" id="dl-by-source">
          By source <span className="muted">({formatCount(counts.total)} in all)</span>
        </h3>
        <ul className="dl-counts__list">
          {bySource.map((r) => (
            <li key={r.key}>
              <button
                type="button"
                className={`chip dl-counts__chip${filters.source === r.key ? " dl-counts__chip--active" : ""}`}
                aria-pressed={filters.source === r.key}
                aria-label={`Show source ${r.key}: ${r.count}`}
                onClick={() => onFilter({ ...filters, source: filters.source === r.key ? undefined : r.key })}
              >
                <span className="source-name">{r.label}</span> <strong>{formatCount(r.count)}</strong>
              </button>
            </li>
          ))}
        </ul>
      </section>
      <section className="dl-counts__group" aria-labelledby="dl-by-error">
        <h3 className="source-card__subtitle" id="dl-by-error">
          By error
        </h3>
        <ul className="dl-counts__list">
          {byError.map((r) => (
            <li key={r.key}>
              <button
                type="button"
                className={`chip dl-counts__chip${filters.errorContains === r.key ? " dl-counts__chip--active" : ""}`}
                aria-pressed={filters.errorContains === r.key}
                aria-label={`Show error ${r.label}: ${r.count}`}
                title={r.key}
                onClick={() => onFilter({ ...filters, errorContains: filters.errorContains === r.key ? undefined : r.key })}
              >
                <span className="mono">{r.label}</span> <strong>{formatCount(r.count)}</strong> <span className="muted">{r.percent}%</span>
              </button>
            </li>
          ))}
        </ul>
      </section>
    </div>
  );
}
