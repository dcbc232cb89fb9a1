/** The Overview's default range follows the data (lib/metrics/default-range.ts). */
import { describe, expect, it } from "vitest";
import { rangeForData } from "@/lib/metrics/default-range";

const now = new Date("2026-12-05T12:00:00Z");
const hoursAgo = (h: number) => new Date(now.getTime() - h * 3600_000);

describe("rangeForData", () => {
  it("opens a new install on the last hour, an older one on the last 24 hours", () => {
    expect(rangeForData(null, now)).toBe("1h");
    expect(rangeForData(hoursAgo(0.2), now)).toBe("1h");
    expect(rangeForData(hoursAgo(5.9), now)).toBe("1h");
    expect(rangeForData(hoursAgo(6), now)).toBe("24h");
    expect(rangeForData(hoursAgo(24 * 40), now)).toBe("24h");
  });
});
