/** Which sources an overview read returns: all up to the limit by name, past it the busiest first, a filter by name first (lib/overview/source-rows.ts). */
import { describe, expect, it } from "vitest";
import { selectSources } from "@/lib/overview/source-rows";
import type { SourceOverview as Row } from "@/lib/overview/schema";

const row = (source: string, claimed: number, alive: number | null = 0): Row =>
  ({
    source,
    keys: { alive, inFlight: 0, leaseLapsed: 0, expired: 0 },
    lastHour: { claimed, duplicate: 0, inFlight: 0, payloadMismatch: 0 },
  }) as unknown as Row;

const names = (r: { rows: Row[] }) => r.rows.map((s) => s.source);

describe("selectSources", () => {
  it("returns every source, as the statement ordered them (by name), up to the limit, and without one", () => {
    const sources = [row("a", 0), row("b", 9), row("c", 1)];
    expect(selectSources(sources, { limit: 3 })).toEqual({ rows: sources, matching: 3 });
    expect(selectSources(sources)).toEqual({ rows: sources, matching: 3 });
  });

  it("past the limit: the busiest by last hour's deliveries, then alive keys, then name; all of them counted", () => {
    const sources = [row("a", 0, 5), row("b", 9), row("c", 1), row("d", 0, 7), row("e", 0, null), row("f", 0, 5)];
    const r = selectSources(sources, { limit: 4 });
    expect(names(r)).toEqual(["b", "c", "d", "a"]);
    expect(r.matching).toBe(6);
    expect(names({ rows: sources })).toEqual(["a", "b", "c", "d", "e", "f"]); // the input is not reordered
    expect(names(selectSources(sources))).toEqual(["a", "b", "c", "d", "e", "f"]);
  });

  it("filters by name, any case, before the limit", () => {
    const sources = [row("stripe-eu", 1), row("stripe-us", 2), row("github", 50), row("Stripe-ap", 3)];
    const r = selectSources(sources, { q: " STRIPE ", limit: 2 });
    expect(names(r)).toEqual(["Stripe-ap", "stripe-us"]);
    expect(r.matching).toBe(3);
    expect(names(selectSources(sources, { q: "stripe" }))).toEqual(["stripe-eu", "stripe-us", "Stripe-ap"]);
    expect(selectSources(sources, { q: "nothing" })).toEqual({ rows: [], matching: 0 });
  });
});
