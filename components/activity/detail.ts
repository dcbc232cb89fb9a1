/** Pure derivations for the action log display (no React). */
import type { ActionRecord } from "./queries";

/** Fields of `detail` the table already shows in its columns. */
const IN_COLUMNS = new Set(["action", "outcome", "target"]);

export type DetailEntry = { label: string; value: unknown };

const LABELS: Record<string, string> = {
  reason: "Reason",
  address: "Address",
  before: "Before",
  after: "After",
  actor_id: "API key id",
};

/** What the expanded row shows: reason, address, before, after first, then anything else recorded. */
export function detailEntries(a: ActionRecord): DetailEntry[] {
  const rest = Object.entries(a.detail).filter(([k, v]) => !IN_COLUMNS.has(k) && v !== undefined && v !== null);
  const order = Object.keys(LABELS);
  rest.sort(([x], [y]) => rank(order, x) - rank(order, y));
  const entries = rest.map(([k, v]) => ({ label: LABELS[k] ?? k, value: v }));
  if (a.source) entries.push({ label: "Source", value: a.source });
  return entries;
}

function rank(order: string[], key: string): number {
  const i = order.indexOf(key);
  return i === -1 ? order.length : i;
}

/** A detail value as text: strings as they are, anything else as indented JSON. */
export function formatDetailValue(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
}
