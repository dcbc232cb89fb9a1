/** The advisor's late-duplicate evidence (lib/retention/evidence.ts): the TTL history as epochs, replays apart. Pure. */
import { describe, expect, it } from "vitest";
import { judgeLateDuplicates, ttlEpochs } from "@/lib/retention/evidence";

const H = 3600;
const D = 86400;
const t = (iso: string) => new Date(iso);

describe("ttlEpochs", () => {
  it("one epoch per TTL in force, oldest first; the creation and edits that kept the TTL are skipped; the last is the current TTL", () => {
    const { epochs, boundaries } = ttlEpochs(
      [
        { at: t("2026-11-01T00:00:00Z"), beforeTtlSeconds: null, afterTtlSeconds: 8 * H + 5 * 60 },
        { at: t("2026-11-10T00:00:00Z"), beforeTtlSeconds: 8 * H + 5 * 60, afterTtlSeconds: 8 * H + 5 * 60 }, // a destination change
        { at: t("2026-11-20T00:00:00Z"), beforeTtlSeconds: 8 * H + 5 * 60, afterTtlSeconds: 2 * D },
      ],
      2 * D,
    );
    expect(boundaries).toEqual([t("2026-11-20T00:00:00Z")]);
    expect(epochs).toEqual([
      { from: null, until: t("2026-11-20T00:00:00Z"), ttlSeconds: 8 * H + 5 * 60 }, // from the creation on
      { from: t("2026-11-20T00:00:00Z"), until: null, ttlSeconds: 2 * D },
    ]);
  });

  it("no history: one epoch, the current TTL", () => {
    expect(ttlEpochs([], 7 * D)).toEqual({ epochs: [{ from: null, until: null, ttlSeconds: 7 * D }], boundaries: [] });
  });
});

describe("judgeLateDuplicates", () => {
  const { epochs } = ttlEpochs([{ at: t("2026-11-20T00:00:00Z"), beforeTtlSeconds: 8 * H, afterTtlSeconds: 2 * D }], 2 * D);

  it("replay-driven late claims are counted apart and are not sender evidence", () => {
    const e = judgeLateDuplicates(
      [
        { epoch: 0, viaReplay: true, count: 3, maxGapSeconds: D + 6 * H },
        { epoch: 1, viaReplay: false, count: 1, maxGapSeconds: 9 * H },
      ],
      epochs,
    );
    expect(e.replays).toEqual({ count: 3, maxGapSeconds: D + 6 * H });
    expect(e.sender).toEqual({ count: 1, maxGapSeconds: 9 * H });
  });

  it("each sender late duplicate is judged against the TTL in force at its first claim", () => {
    const e = judgeLateDuplicates(
      [
        { epoch: 0, viaReplay: false, count: 4, maxGapSeconds: 20 * H },
        { epoch: 1, viaReplay: false, count: 1, maxGapSeconds: 3 * D },
      ],
      epochs,
    );
    expect(e.byTtl.map((b) => [b.ttlSeconds, b.current, b.count, b.maxGapSeconds])).toEqual([
      [8 * H, false, 4, 20 * H],
      [2 * D, true, 1, 3 * D],
    ]);
    expect(e.underCurrentTtl).toEqual({ count: 1, maxGapSeconds: 3 * D });
    // Only under the earlier TTL: none under the current one.
    const old = judgeLateDuplicates([{ epoch: 0, viaReplay: false, count: 4, maxGapSeconds: 20 * H }], epochs);
    expect(old.underCurrentTtl).toEqual({ count: 0, maxGapSeconds: null });
    expect(old.sender.count).toBe(4);
  });
});
