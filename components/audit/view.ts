/** Pure derivations for the audit screens (no React): filters from the URL, time inputs, labels. */
import { KNOWN_AUDIT_KINDS } from "@/lib/audit/schema";
import { FILTER_FIELDS, type AuditRow, type AuditSearchFilters } from "./queries";
import { isoToLocalInput, localInputToIso } from "@/components/ui/datetime-input";
import { ADVICE_WINDOWS } from "@/components/sources/advisor-view";

export { isoToLocalInput, localInputToIso };

export { KNOWN_AUDIT_KINDS };

/** The filters a URL's query string carries (unknown parameters ignored, empty ones dropped). */
export function filtersFromParams(params: { get(name: string): string | null }): AuditSearchFilters {
  const f: AuditSearchFilters = {};
  for (const k of FILTER_FIELDS) {
    const v = params.get(k)?.trim();
    if (v) f[k] = v;
  }
  return f;
}

const KIND_LABELS: Record<string, string> = {
  claimed: "Claimed",
  lease_takeover: "Lease taken over",
  reclaimed_after_expiry: "Reclaimed after expiry",
  completed: "Completed",
  released: "Released",
  dead_lettered: "Dead-lettered",
  replayed: "Replayed",
  operator: "Operator action",
};

/** A kind for people; a kind this console does not know yet is shown as it is stored. */
export function kindLabel(kind: string): string {
  return KIND_LABELS[kind] ?? kind;
}

export const isKnownKind = (kind: string) => Object.hasOwn(KIND_LABELS, kind);

/** A row's detail in one short line for the results table: `key: value` pairs, JSON for nested values. */
export function detailSummary(row: Pick<AuditRow, "detail">, max = 120): string {
  if (!row.detail) return "";
  const text = Object.entries(row.detail)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(", ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** ISO instants inside a sentence from the API, rewritten by `format` (e.g. local date and time). */
export function formatInstants(sentence: string, format: (iso: string) => string): string {
  return sentence.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, (iso) => format(iso));
}

/** The source and event id of an operator action's target, when it names a key (`{type:"key", id:"source/eventId"}`). */
export function keyOfTarget(target: { type: string; id: string } | null): { source: string; eventId: string } | null {
  if (!target || target.type !== "key") return null;
  const slash = target.id.indexOf("/");
  if (slash <= 0 || slash === target.id.length - 1) return null;
  return { source: target.id.slice(0, slash), eventId: target.id.slice(slash + 1) };
}

const DAY_MS = 86_400_000;

/**
 * The source page's late-duplicate list (the retention advisor's evidence), in the smallest advisor window
 * that still holds a late claim made at `lateClaimAt` (as of `asOf`), scrolled to the list.
 */
export function lateDuplicatesHref(source: string, lateClaimAt: string, asOf: string): string {
  const ageDays = (Date.parse(asOf) - Date.parse(lateClaimAt)) / DAY_MS;
  const window = ADVICE_WINDOWS.find((w) => Number.parseInt(w, 10) > ageDays) ?? ADVICE_WINDOWS[ADVICE_WINDOWS.length - 1];
  return `/sources/${encodeURIComponent(source)}?window=${window}#late-duplicates`;
}
