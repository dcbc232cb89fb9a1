/** Scaling a sample of the dedup table to per-source key counts (lib/metrics/per-source.ts). Pure. */
import { describe, expect, it } from "vitest";
import { scalePerSource } from "@/lib/metrics/per-source";

describe("scalePerSource", () => {
  it("gives each source its share of the sampled rows, applied to the table's totals, so they add up", () => {
    const m = scalePerSource(
      [
        { source: "a", alive: 300, expired: 10 },
        { source: "b", alive: 100, expired: 30 },
      ],
      { aliveKeys: 4_000_000, expiryBacklog: 80_000 },
    );
    expect(m.get("a")).toEqual({ aliveKeys: 3_000_000, expiryBacklog: 20_000 });
    expect(m.get("b")).toEqual({ aliveKeys: 1_000_000, expiryBacklog: 60_000 });
  });

  it("an empty sample gives zeros, never NaN", () => {
    expect(scalePerSource([{ source: "a", alive: 0, expired: 0 }], { aliveKeys: 10, expiryBacklog: 5 }).get("a")).toEqual({ aliveKeys: 0, expiryBacklog: 0 });
  });
});
