/**
 * The dead-letter list's filters (the query string it sends and the shareable URL it reads) and the
 * counts by source and by error beside it. Pure; unit-tested in test/replay/console-view.unit.test.ts.
 */
import type { DeadLetterStatus } from "@/lib/deadletters/schema";

// Filters

/** The statuses the list filters by (lib/deadletters/schema.ts DEAD_LETTER_STATUSES; a copy of the names only, so the schema module's parser stays off the client). */
export const FILTER_STATUSES: readonly DeadLetterStatus[] = ["pending", "replaying", "delivered", "unidentified", "discarded", "resolved"];

export type DeadLetterFilters = {
  source?: string;
  /** ISO instants. */
  from?: string;
  to?: string;
  errorContains?: string;
  status?: DeadLetterStatus;
};

/** The list's query string (without cursor); empty values are left out. */
export function filterParams(filters: DeadLetterFilters, extra: Record<string, string> = {}): URLSearchParams {
  const params = new URLSearchParams();
  for (const key of ["source", "from", "to", "errorContains", "status"] as const) {
    const v = filters[key];
    if (v) params.set(key, v);
  }
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  return params;
}

/**
 * The filters a shareable URL carries (/replay?source=stripe&status=pending&from=…): the same names as
 * filterParams writes; a value that is not one the list takes (an unknown status, an instant that does
 * not parse) is left out rather than sent to be refused.
 */
export function filtersFromParams(params: Record<string, string | string[] | undefined>): DeadLetterFilters {
  const one = (k: string) => {
    const v = params[k];
    const s = Array.isArray(v) ? v[v.length - 1] : v;
    return s && s.trim() ? s : undefined;
  };
  const instant = (k: string) => {
    const v = one(k);
    return v && !Number.isNaN(Date.parse(v)) ? v : undefined;
  };
  const status = one("status");
  const f: DeadLetterFilters = {
    source: one("source"),
    from: instant("from"),
    to: instant("to"),
    errorContains: one("errorContains"),
    status: status && (FILTER_STATUSES as readonly string[]).includes(status) ? (status as DeadLetterStatus) : undefined,
  };
  for (const k of Object.keys(f) as (keyof DeadLetterFilters)[]) if (f[k] === undefined) delete f[k];
  return f;
}

export function hasFilters(f: DeadLetterFilters): boolean {
  return Boolean(f.source || f.from || f.to || f.errorContains || f.status);
}

// Counts beside the list

export type CountRow = { key: string; label: string; count: number; percent: number };

/**
 * Counts by source or by error as rows with their share of `total` (whole percent), largest first; an
 * error message is cut to `maxLabel` characters for the label (the key keeps the whole text to filter by).
 */
export function countRows(entries: readonly { key: string; count: number }[], total: number, maxLabel = 80): CountRow[] {
  return [...entries]
    .sort((a, b) => b.count - a.count || a.key.localeCompare(b.key))
    .map((e) => ({
      key: e.key,
      label: e.key.length > maxLabel ? `${e.key.slice(0, maxLabel - 1)}…` : e.key,
      count: e.count,
      percent: total > 0 ? Math.round((e.count / total) * 100) : 0,
    }));
}
