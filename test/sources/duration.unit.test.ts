/** lib/sources/duration.ts: parsing and formatting durations as operators write them. Pure. */
import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration } from "@/lib/sources/duration";

describe("parseDuration", () => {
  it.each([
    ["90s", 90],
    ["5m", 300],
    ["36h", 129600],
    ["3d", 259200],
    ["1d12h", 129600],
    ["7d5m", 605100],
    ["1d1h1m1s", 90061],
    ["0s", 0],
    ["  2h ", 7200],
    ["1m1m", 120], // repeated units add up
    ["90m", 5400], // no carrying required
  ])("%s → %d s", (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each([
    [""],
    ["5"],
    ["d"],
    ["5x"],
    ["5 m"],
    ["1d 12h"],
    ["-5s"],
    ["1.5h"],
    ["5M"],
    ["3days"],
    ["1w"],
    ["5s5"],
    ["∞"],
  ])("rejects %j with a message showing the accepted form", (text) => {
    expect(() => parseDuration(text)).toThrow(/not a duration: use a number with a unit s, m, h or d/);
  });

  it("rejects a duration too long to count exactly", () => {
    expect(() => parseDuration("9999999999999999d")).toThrow(/too long/);
  });
});

describe("formatDuration", () => {
  it.each([
    [0, "0s"],
    [1, "1s"],
    [59, "59s"],
    [60, "1m"],
    [90, "1m30s"],
    [3600, "1h"],
    [86400, "1d"],
    [129600, "1d12h"],
    [605100, "7d5m"],
    [90061, "1d1h1m1s"],
    [90 * 86400, "90d"],
  ])("%d s → %s", (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });

  it("drops fractions of a second and reads a negative or non-numeric span as 0s", () => {
    expect(formatDuration(90.9)).toBe("1m30s");
    expect(formatDuration(0.5)).toBe("0s");
    expect(formatDuration(-60)).toBe("0s");
    expect(formatDuration(Number.NaN)).toBe("0s");
  });

  it("round-trips: parse(format(n)) = n across the whole TTL range", () => {
    const samples = [0, 1, 59, 61, 3599, 3601, 86399, 86401, 604800, 605100, 7776000];
    for (let n = 0; n < 200; n++) samples.push((n * 104729 * 37) % 7776001);
    for (const n of samples) expect(parseDuration(formatDuration(n)), String(n)).toBe(n);
  });

  it("is the shortest rendering: each unit at most once, largest first", () => {
    for (const n of [1, 61, 3661, 90061, 7776000 - 1]) {
      const text = formatDuration(n);
      const units = text.replace(/\d+/g, "");
      expect(new Set(units).size).toBe(units.length);
      const ranks = [...units].map((u) => "dhms".indexOf(u));
      expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
      expect(text.match(/\d+/g)!.every((n, i) => i === 0 || Number(n) < [24, 60, 60][ranks[i] - 1])).toBe(true);
    }
  });
});
