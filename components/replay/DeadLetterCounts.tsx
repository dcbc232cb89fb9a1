"use client";

import { formatCount } from "@/components/ui/format";
import { countRows, type DeadLetterFilters } from "./dead-letter-list";
import type { DeadLetterList } from "@/lib/deadletters/schema";
import styles from "./replay.module.css";
import textStyles from "@/components/ui/text.module.css";
import { clsx } from "clsx";
import tableStyles from "@/components/ui/Table.module.css";

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
    <div className={styles.counts}>
      <section aria-labelledby="dl-by-source">
        <h3 className={textStyles.subtitle} id="dl-by-source">
          By source <span className="muted">({formatCount(counts.total)} in all)</span>
        </h3>
        <ul className={styles.countList}>
          {bySource.map((r) => (
            <li key={r.key}>
              <button
                type="button"
                className={clsx(tableStyles.chip, styles.countChip, filters.source === r.key && styles.countChipActive)}
                aria-pressed={filters.source === r.key}
                onClick={() => onFilter({ ...filters, source: filters.source === r.key ? undefined : r.key })}
              >
                {/* The accessible name is the visible label with its verb: "Show source orders 10" (WCAG 2.5.3). */}
                <span className="visually-hidden">Show source </span>
                <span className={textStyles.sourceName}>{r.label}</span> <strong>{formatCount(r.count)}</strong>
              </button>
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="dl-by-error">
        <h3 className={textStyles.subtitle} id="dl-by-error">
          By error
        </h3>
        <ul className={styles.countList}>
          {byError.map((r) => (
            <li key={r.key}>
              <button
                type="button"
                className={clsx(tableStyles.chip, styles.countChip, filters.errorContains === r.key && styles.countChipActive)}
                aria-pressed={filters.errorContains === r.key}
                title={r.key}
                onClick={() => onFilter({ ...filters, errorContains: filters.errorContains === r.key ? undefined : r.key })}
              >
                <span className="visually-hidden">Show error </span>
                <span className="mono">{r.label}</span> <strong>{formatCount(r.count)}</strong> <span className="muted">{r.percent}%</span>
              </button>
            </li>
          ))}
        </ul>
      </section>
    </div>
  );
}
