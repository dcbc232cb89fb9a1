/**
 * The five preflight categories in the words the Replay screen uses: what each means for a replay, its
 * tone, and a preflight's items grouped by them. Pure; unit-tested in test/replay/console-view.unit.test.ts.
 */
import { CATEGORIES, type Category, type PreflightCounts, type PreflightItem } from "@/lib/replay/schema";

export { CATEGORIES };

export type CategoryInfo = {
  label: string;
  /** One plain sentence: what it means for a replay. */
  explanation: string;
  tone: "ok" | "warn" | "error" | "off";
};

export const CATEGORY_INFO: Record<Category, CategoryInfo> = {
  alive: {
    label: "Key alive",
    explanation: "Already protected: if it was processed, the handler's claim will reject the replay as a duplicate.",
    tone: "ok",
  },
  expiring: {
    label: "Key expiring",
    explanation: "Protected now, but the key expires before the replay window ends — extend first.",
    tone: "warn",
  },
  expired_processed: {
    label: "Expired, processed",
    explanation:
      "Was processed and its key is gone: replaying it would process it twice — excluded unless you force it with a reason.",
    tone: "error",
  },
  never_processed: {
    label: "Never processed",
    explanation: "No record of processing — safe to replay.",
    tone: "ok",
  },
  in_flight: {
    label: "In flight",
    explanation: "A handler holds it right now — wait.",
    tone: "off",
  },
};

export type CategoryRow = CategoryInfo & { category: Category; count: number };

/** The five categories in their fixed order, with their counts and meaning. */
export function categoryRows(counts: PreflightCounts): CategoryRow[] {
  return CATEGORIES.map((category) => ({ category, count: counts[category] ?? 0, ...CATEGORY_INFO[category] }));
}

/** A preflight's items grouped by category (every category present, in the server's order). */
export function itemsByCategory(items: readonly PreflightItem[]): Record<Category, PreflightItem[]> {
  const out = Object.fromEntries(CATEGORIES.map((c) => [c, [] as PreflightItem[]])) as Record<Category, PreflightItem[]>;
  for (const item of items) out[item.category]?.push(item);
  return out;
}
