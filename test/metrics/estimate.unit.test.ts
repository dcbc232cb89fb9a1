/** The sampler's pure rules: row estimates, exact-when-cheap figures, the step ladder, the tick timing. */
import { describe, expect, it } from "vitest";
import { leafRowEstimate, tableFigures } from "@/lib/metrics/estimate";
import { msUntilNextTick } from "@/lib/metrics/sampler";
import { MAX_POINTS, stepFor } from "@/lib/metrics/step";

describe("leafRowEstimate", () => {
  it("scales the analyzed density to the table's current size, like the planner", () => {
    expect(leafRowEstimate({ reltuples: 1000, relpages: 10, pages: 10 })).toBe(1000);
    expect(leafRowEstimate({ reltuples: 1000, relpages: 10, pages: 25 })).toBe(2500);
  });

  it("has no estimate for a table never analyzed (reltuples -1) or analyzed empty and grown since", () => {
    expect(leafRowEstimate({ reltuples: -1, relpages: 0, pages: 40 })).toBeNull();
    expect(leafRowEstimate({ reltuples: 0, relpages: 0, pages: 40 })).toBeNull();
  });

  it("knows an empty table has no rows, analyzed or not", () => {
    expect(leafRowEstimate({ reltuples: -1, relpages: 0, pages: 0 })).toBe(0);
    expect(leafRowEstimate({ reltuples: 500, relpages: 5, pages: 0 })).toBe(0);
  });
});

describe("tableFigures", () => {
  const caps = { backlogCap: 1000, aliveCap: 100 };

  it("is exact when both counts stayed under their caps, whatever the planner thinks", () => {
    const f = tableFigures([{ reltuples: -1, relpages: 0, pages: 9 }], { ...caps, backlog: 40, alive: 60 });
    expect(f).toEqual({ estimatedRows: 100, aliveKeys: 60, expiryBacklog: 40, backlogCapped: false, exact: true });
  });

  it("caps the backlog and estimates the rows from the planner, summed over partitions", () => {
    const leaves = [
      { reltuples: 3000, relpages: 30, pages: 30 },
      { reltuples: 2000, relpages: 20, pages: 40 },
    ];
    const f = tableFigures(leaves, { ...caps, backlog: 1001, alive: 50 });
    expect(f).toEqual({ estimatedRows: 7000, aliveKeys: 50, expiryBacklog: 1000, backlogCapped: true, exact: false });
  });

  it("estimates alive keys as rows minus backlog once there are more than it counts", () => {
    const f = tableFigures([{ reltuples: 5000, relpages: 50, pages: 50 }], { ...caps, backlog: 300, alive: 101 });
    expect(f).toEqual({ estimatedRows: 5000, aliveKeys: 4700, expiryBacklog: 300, backlogCapped: false, exact: false });
  });

  it("never reports fewer rows or alive keys than it counted (a stale or missing estimate)", () => {
    const f = tableFigures([{ reltuples: -1, relpages: 0, pages: 900 }], { ...caps, backlog: 1001, alive: 101 });
    expect(f.estimatedRows).toBe(1100);
    expect(f.aliveKeys).toBe(100);
    const stale = tableFigures([{ reltuples: 10, relpages: 10, pages: 10 }], { ...caps, backlog: 20, alive: 101 });
    expect(stale.estimatedRows).toBe(120);
    expect(stale.aliveKeys).toBe(100);
  });
});

describe("stepFor", () => {
  it("keeps every minute up to 3 hours, then coarser steps under the point budget", () => {
    expect(stepFor(3600)).toBe(60);
    expect(stepFor(3 * 3600)).toBe(60);
    expect(stepFor(12 * 3600)).toBe(300);
    expect(stepFor(86400)).toBe(600);
    expect(stepFor(7 * 86400)).toBe(3600);
    expect(stepFor(30 * 86400)).toBe(14400);
    expect(stepFor(31 * 86400)).toBe(21600);
    for (const range of [3600, 86400, 7 * 86400, 30 * 86400, 31 * 86400]) {
      expect(range / stepFor(range)).toBeLessThanOrEqual(MAX_POINTS);
    }
  });
});

describe("msUntilNextTick", () => {
  it("aims at the next wall-clock multiple of the interval plus the offset", () => {
    const minute = 60_000;
    expect(msUntilNextTick(10 * minute, minute)).toBe(2000);
    expect(msUntilNextTick(10 * minute + 1000, minute)).toBe(1000);
    expect(msUntilNextTick(10 * minute + 2000, minute)).toBe(minute);
    expect(msUntilNextTick(10 * minute + 30_000, minute)).toBe(32_000);
    expect(msUntilNextTick(10 * minute + 30_000, 5 * minute)).toBe(4 * minute + 32_000);
  });
});
