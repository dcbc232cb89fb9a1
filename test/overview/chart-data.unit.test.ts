/** The Overview's chart preparation, pure: the time grid and its gaps, slotting, ticks and units. */
import { isLonePoint } from "@/components/charts/gaps";
import { describe, expect, it } from "vitest";
import {
  byteTicks,
  formatAxisTime,
  formatPointTime,
  formatRate,
  formatStep,
  hasValues,
  latestOf,
  MAX_SLOTS,
  peakOf,
  runSeries,
  sampleSeries,
  slotOf,
  timeTicks,
} from "@/components/overview/chart-data";
import { aliveFigure, expiredFigure } from "@/components/overview/figures";
import { formatBytes, formatCompact } from "@/components/ui/format";
import type { MetricSample } from "@/lib/metrics/schema";
import type { Overview } from "@/lib/overview/schema";

const T0 = Date.parse("2026-12-02T10:00:00Z");
const min = (n: number) => T0 + n * 60_000;
const iso = (t: number) => new Date(t).toISOString();

function sample(t: number, v: Partial<MetricSample> = {}): MetricSample {
  return {
    at: iso(t),
    tableBytes: 1000,
    indexBytes: 200,
    estimatedRows: 50,
    aliveKeys: 40,
    expiryBacklog: 10,
    backlogCapped: false,
    inFlight: 1,
    claims: 3,
    duplicates: 1,
    aliveKeysMin: 40,
    aliveKeysMax: 40,
    tableBytesMin: 1000,
    tableBytesMax: 1000,
    ...v,
  };
}

describe("sampleSeries", () => {
  it("lays samples on one slot per step from `from` to `to`, and leaves missing minutes null, not zero", () => {
    const points = sampleSeries({
      from: iso(min(0)),
      to: iso(min(5)),
      step: 60,
      samples: [sample(min(0)), sample(min(1), { expiryBacklog: 0, claims: 0 }), sample(min(4))],
    });
    expect(points.map((p) => p.t)).toEqual([0, 1, 2, 3, 4, 5].map(min));
    expect(points.map((p) => p.expiryBacklog)).toEqual([10, 0, null, null, 10, null]);
    expect(points.map((p) => p.claims)).toEqual([3, 0, null, null, 3, null]);
    expect(points[2]).toMatchObject({ tableBytes: null, backlogCapped: null, inFlight: null });
  });

  it("finds a value with gaps on both sides in its own series (a line needs two points; it gets a dot)", () => {
    const points = sampleSeries({ from: iso(min(0)), to: iso(min(4)), step: 60, samples: [sample(min(0)), sample(min(1)), sample(min(3))] });
    expect(points.map((_, i) => isLonePoint(points, i, "tableBytes"))).toEqual([false, false, false, true, false]);
    // Per series: a value lone in one series is not in another that has values around it.
    const mixed = [{ a: 1, b: 1 }, { a: null, b: 2 }, { a: 3, b: 3 }, { a: null, b: null }, { a: 5, b: null }];
    expect(mixed.map((_, i) => isLonePoint(mixed, i, "a"))).toEqual([true, false, true, false, true]);
    expect(mixed.map((_, i) => isLonePoint(mixed, i, "b"))).toEqual([false, false, false, false, false]);
    expect(isLonePoint([{ a: Number.NaN }], 0, "a")).toBe(false);
  });

  it("starts the grid at the slot holding `from` (slots start on multiples of the step since the epoch)", () => {
    const points = sampleSeries({ from: iso(min(7) + 30_000), to: iso(min(30)), step: 900, samples: [sample(min(15))] });
    expect(points.map((p) => p.t)).toEqual([min(0), min(15), min(30)]);
    expect(points.map((p) => p.tableBytes)).toEqual([null, 1000, null]);
    expect(slotOf(min(29) + 59_999, 900_000)).toBe(min(15));
  });

  it("buckets samples that share a slot: sizes average, backlog and in-flight peak, claims add up", () => {
    const points = sampleSeries({
      from: iso(min(0)),
      to: iso(min(10)),
      step: 600,
      samples: [
        sample(min(1), { tableBytes: 1000, expiryBacklog: 5, inFlight: 2, claims: 1, duplicates: 2 }),
        sample(min(4), { tableBytes: 2001, expiryBacklog: 9, inFlight: 1, claims: 10, duplicates: 20, backlogCapped: true }),
      ],
    });
    expect(points[0]).toMatchObject({ tableBytes: 1501, expiryBacklog: 9, inFlight: 2, claims: 11, duplicates: 22, backlogCapped: true });
    expect(points[1].tableBytes).toBeNull();
  });

  it("ignores samples outside the range and never builds more than MAX_SLOTS slots", () => {
    const points = sampleSeries({ from: iso(min(0)), to: iso(min(2)), step: 60, samples: [sample(min(-1)), sample(min(3))] });
    expect(hasValues(points, "tableBytes")).toBe(false);
    expect(sampleSeries({ from: iso(0), to: iso(min(0)), step: 60, samples: [] })).toHaveLength(MAX_SLOTS);
  });
});

describe("series summaries", () => {
  const points = sampleSeries({
    from: iso(min(0)),
    to: iso(min(3)),
    step: 60,
    samples: [sample(min(0), { expiryBacklog: 7 }), sample(min(1), { expiryBacklog: 12 }), sample(min(2), { expiryBacklog: 4 })],
  });

  it("reads the newest value, skipping trailing gaps, and the peak", () => {
    expect(latestOf(points, "expiryBacklog")).toBe(4);
    expect(peakOf(points, "expiryBacklog")).toBe(12);
    expect(latestOf([], "expiryBacklog")).toBeNull();
  });
});

describe("runSeries", () => {
  it("orders prune runs by start, rows and rows per second as sent (null while running)", () => {
    const runs = runSeries([
      { startedAt: iso(min(5)), finishedAt: null, rows: 10, batches: 1, rowsPerSecond: null, stopped: null, runs: 1, failed: 0, lastError: null },
      { startedAt: iso(min(1)), finishedAt: iso(min(2)), rows: 6000, batches: 2, rowsPerSecond: 100, stopped: "drained", runs: 1, failed: 0, lastError: null },
    ]);
    expect(runs).toEqual([
      { t: min(1), rows: 6000, rowsPerSecond: 100, batches: 2, runs: 1, stopped: "drained" },
      { t: min(5), rows: 10, rowsPerSecond: null, batches: 1, runs: 1, stopped: null },
    ]);
  });
});

describe("timeTicks", () => {
  it("puts round ticks inside the range: 10 min over an hour, 3 h over a day, days over a week", () => {
    expect(timeTicks(min(-55), min(5), 0)).toEqual([-50, -40, -30, -20, -10, 0].map(min));
    const day = timeTicks(T0 - 86400_000, T0, 0).map((t) => new Date(t).getUTCHours());
    expect(day).toEqual([12, 15, 18, 21, 0, 3, 6, 9]);
    const week = timeTicks(T0 - 7 * 86400_000, T0, 0);
    expect(week).toHaveLength(7);
    expect(week.every((t) => t % 86400_000 === 0)).toBe(true);
  });

  it("aligns ticks to local time: midnight in UTC+1 is 23:00 UTC", () => {
    const week = timeTicks(T0 - 7 * 86400_000, T0, -60);
    expect(week.every((t) => new Date(t).getUTCHours() === 23)).toBe(true);
  });
});

describe("time labels", () => {
  it("shows the clock time for ranges up to a day and the date beyond", () => {
    expect(formatAxisTime(min(5), 3600_000, "UTC")).toBe("10:05");
    expect(formatAxisTime(min(5), 86400_000, "UTC")).toBe("10:05");
    expect(formatAxisTime(min(5), 7 * 86400_000, "UTC")).toBe("2 Dec");
    expect(formatPointTime(min(5), "UTC")).toBe("2 Dec, 10:05");
  });
});

describe("units", () => {
  it("formats bytes in binary units, three significant digits (whole numbers from 1000)", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(5_000_000_000)).toBe("4.66 GiB");
    expect(formatBytes(1024 * 1024 - 1)).toBe("1 MiB");
    expect(formatBytes(1000 * 1024)).toBe("1000 KiB");
    expect(formatBytes(863_477_760)).toBe("823 MiB");
  });

  it("puts byte ticks on round numbers of one binary unit, up to at least the peak", () => {
    expect(byteTicks(7_777_777_777)).toEqual([0, 2, 4, 6, 8].map((n) => n * 1024 ** 3));
    expect(byteTicks(900 * 1024).map(formatBytes)).toEqual(["0 B", "250 KiB", "500 KiB", "750 KiB", "1000 KiB"]);
    expect(byteTicks(24_576)).toEqual([0, 10240, 20480, 30720]);
    expect(byteTicks(0)).toEqual([0, 1024]);
  });

  it("formats counts compactly without rounding up into the wrong unit", () => {
    expect(formatCompact(0)).toBe("0");
    expect(formatCompact(999)).toBe("999");
    expect(formatCompact(1234)).toBe("1.23k");
    expect(formatCompact(12_345)).toBe("12.3k");
    expect(formatCompact(999_999)).toBe("1M");
    expect(formatCompact(9_000_000)).toBe("9M");
    expect(formatCompact(2_500_000_000)).toBe("2.5B");
    expect(formatCompact(12.34)).toBe("12.3");
    expect(formatRate(5000)).toBe("5k/s");
  });

  it("says a step as people do", () => {
    expect(formatStep(60)).toBe("1 min");
    expect(formatStep(900)).toBe("15 min");
    expect(formatStep(3600)).toBe("1 h");
    expect(formatStep(86400)).toBe("1 d");
  });
});

describe("headline figures", () => {
  const base: Overview = {
    asOf: "2026-12-02T10:00:30.000Z",
    lastHourSince: "2026-12-02T09:01:00.000Z",
    countLimit: 100_000,
    latestSample: null,
    totals: {
      sources: 1,
      keys: { alive: 12, inFlight: 0, leaseLapsed: 0, expired: 3 },
      lastHour: { claimed: 0, duplicate: 0, inFlight: 0, payloadMismatch: 0 },
    },
    replays: { running: 0, unhealthy: 0, stalled: 0, failing: 0 },
    sources: [],
    sourcesMatching: 0,
  };
  const withSample = (keys: Partial<Overview["totals"]["keys"]>, s: Partial<MetricSample> = {}): Overview => ({
    ...base,
    latestSample: sample(min(0), s),
    totals: { ...base.totals, keys: { ...base.totals.keys, ...keys } },
  });

  it("shows counted figures as they are", () => {
    expect(aliveFigure(base)).toEqual({ text: "12" });
    expect(expiredFigure(base)).toEqual({ text: "3" });
  });

  it("falls back to the sample's estimate, marked as one", () => {
    expect(aliveFigure(withSample({ alive: null }, { aliveKeys: 4_200_000 })).text).toBe("≈4,200,000");
    expect(expiredFigure(withSample({ expired: null }, { expiryBacklog: 1_000_000, backlogCapped: true })).text).toBe("≥1,000,000");
    expect(expiredFigure(withSample({ expired: null }, { expiryBacklog: 250_000 })).text).toBe("≈250,000");
  });

  it("says only 'more than the limit' when there is nothing better", () => {
    expect(aliveFigure({ ...base, totals: { ...base.totals, keys: { ...base.totals.keys, alive: null } } }).text).toBe(">100,000");
    expect(expiredFigure(withSample({ expired: null }, { expiryBacklog: 5 })).text).toBe(">100,000");
  });
});
