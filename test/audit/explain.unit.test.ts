/** The pure parts of the audit search: explaining an event from its key and timeline, range defaults, LIKE escaping, CSV cells. */
import { describe, expect, it } from "vitest";
import { explainEvent, lateClaims } from "@/lib/audit/explain";
import { csvCell } from "@/lib/audit/export";
import { likePrefix, resolveRange } from "@/lib/audit/search";
import { auditSearchQuery, type AuditRow, type KeyRow } from "@/lib/audit/schema";
import { KeywardError } from "@/lib/errors";
import { encodeCursor } from "@/lib/pagination";

const NOW = new Date("2026-12-02T12:00:00.000Z");
const key = (row: KeyRow | null) => ({ source: "stripe", eventId: "evt_1", row });
let n = 0;
const audit = (kind: string, at: string, detail: Record<string, unknown> | null = null): AuditRow => ({
  id: String(++n),
  at,
  source: "stripe",
  eventId: "evt_1",
  eventType: "invoice.paid",
  kind,
  actor: "apikey:billing",
  detail,
});

describe("processed twice (issue 23 §4)", () => {
  it("a claim after the key expired is a late duplicate: the headline says twice, both times, and the fact counts", () => {
    const first = audit("claimed", "2026-12-01T00:15:00Z", { expiresAt: "2026-12-01T08:15:00Z" });
    const again = audit("reclaimed_after_expiry", "2026-12-01T13:10:56Z", { expiresAt: "2026-12-01T21:10:56Z" });
    const e = explainEvent(
      key({ eventType: "invoice.paid", status: "done", receivedAt: again.at, expiresAt: "2026-12-02T21:10:56.000Z", leaseExpiresAt: null, duplicateCount: 0, lastDuplicateAt: null }),
      [first, again],
      NOW,
    );
    expect(e.headline).toBe(
      "Processed twice: at 2026-12-01T00:15:00.000Z, and again at 2026-12-01T13:10:56.000Z after its key had expired (a late duplicate).",
    );
    expect(e.timesProcessed).toBe(2);
    expect(e.lateClaims).toEqual([
      { firstClaimAt: "2026-12-01T00:15:00.000Z", lateClaimAt: "2026-12-01T13:10:56.000Z", gapSeconds: 46556, keyThen: "unpruned", viaReplay: false, auditId: again.id },
    ]);
    expect([e.keyState, e.processed]).toEqual(["alive", true]);
  });

  it("the late-duplicate rule of the advisor's job: a release in between, or a lease takeover, is not one; a replay is marked", () => {
    expect(lateClaims([audit("claimed", "2026-12-01T00:00:00Z"), audit("released", "2026-12-01T00:01:00Z"), audit("claimed", "2026-12-01T00:02:00Z")])).toEqual([]);
    expect(lateClaims([audit("claimed", "2026-12-01T00:00:00Z"), audit("lease_takeover", "2026-12-01T00:10:00Z")])).toEqual([]);
    const three = lateClaims([
      audit("claimed", "2026-12-01T00:00:00Z"),
      audit("claimed", "2026-12-01T10:00:00Z"),
      audit("replayed", "2026-12-01T10:00:01Z", { outcome: "delivered", forced: true }),
      audit("reclaimed_after_expiry", "2026-12-02T10:00:00Z"),
    ]);
    expect(three.map((l) => [l.firstClaimAt, l.keyThen, l.viaReplay])).toEqual([
      ["2026-12-01T00:00:00.000Z", "pruned", true],
      ["2026-12-01T10:00:00.000Z", "unpruned", false],
    ]);
    const e = explainEvent(key(null), [audit("claimed", "2026-12-01T00:00:00Z"), audit("claimed", "2026-12-01T10:00:00Z"), audit("claimed", "2026-12-01T11:00:00Z")], NOW);
    expect(e.timesProcessed).toBe(3);
    expect(e.headline).toMatch(/^Processed three times: at 2026-12-01T00:00:00.000Z, and again at 2026-12-01T10:00:00.000Z, at 2026-12-01T11:00:00.000Z after/);
  });

  it("in the story (dead-letter and replay rows), the late claim reads 'processed again'", () => {
    const e = explainEvent(
      key(null),
      [audit("claimed", "2026-12-01T00:00:00Z"), audit("dead_lettered", "2026-12-01T00:01:00Z"), audit("claimed", "2026-12-01T10:00:00Z")],
      NOW,
    );
    expect(e.headline).toContain("processed again (its key had expired) at 2026-12-01T10:00:00.000Z");
  });
});

describe("explainEvent headline (the whole story)", () => {
  it("after a dead-letter and a forced replay it tells every step, not only 'Processed at T'", () => {
    const rows = [
      audit("claimed", "2026-11-20T10:00:00.000Z", { expiresAt: "2026-11-27T10:00:00.000Z" }),
      audit("dead_lettered", "2026-11-20T10:05:00.000Z", { deadLetterId: "d1", error: "timeout" }),
      audit("replayed", "2026-12-01T09:00:00.000Z", { replayId: "r1", outcome: "failed", error: "HTTP 500 Internal Server Error" }),
      audit("replayed", "2026-12-01T09:30:00.000Z", { replayId: "r2", outcome: "delivered", forced: true }),
    ];
    const e = explainEvent(key(null), rows, NOW);
    expect(e.headline).toBe(
      "Processed at 2026-11-20T10:00:00.000Z; dead-lettered at 2026-11-20T10:05:00.000Z (timeout); " +
        "replayed at 2026-12-01T09:00:00.000Z → failed (HTTP 500 Internal Server Error); replayed at 2026-12-01T09:30:00.000Z → delivered.",
    );
    expect(e.sentence).toMatch(/^Processed at 2026-11-20T10:00:00.000Z; key expired/);
  });

  it("is the key's sentence when the history holds only claims", () => {
    const e = explainEvent(key(null), [audit("claimed", "2026-11-20T10:00:00.000Z", { expiresAt: "2026-11-27T10:00:00.000Z" })], NOW);
    expect(e.headline).toBe(e.sentence);
  });
});

describe("explainEvent", () => {
  it("a live key: processed at its claim, alive until its expiry, duplicates from the key", () => {
    const claimed = audit("claimed", "2026-12-01T10:00:00.123456Z", { expiresAt: "2026-12-08T10:00:00.123+00:00" });
    const e = explainEvent(
      key({
        eventType: "invoice.paid",
        status: "done",
        receivedAt: "2026-12-01T10:00:00.123Z",
        expiresAt: "2026-12-08T10:00:00.123Z",
        leaseExpiresAt: null,
        duplicateCount: 3,
        lastDuplicateAt: "2026-12-01T11:00:00.000Z",
      }),
      [claimed],
      NOW,
    );
    expect(e.fate).toBe("alive");
    expect(e.sentence).toBe("Processed at 2026-12-01T10:00:00.123Z; key alive until 2026-12-08T10:00:00.123Z.");
    expect(e).toMatchObject({
      status: "done",
      duplicateCount: 3,
      firstSeenAt: "2026-12-01T10:00:00.123Z",
      lastSeenAt: "2026-12-01T11:00:00.000Z",
      claims: 1,
    });
  });

  it("a key past its TTL but not pruned yet is expired, waiting to be pruned", () => {
    const e = explainEvent(
      key({
        eventType: "t",
        status: "done",
        receivedAt: "2026-11-01T10:00:00.000Z",
        expiresAt: "2026-11-08T10:00:00.000Z",
        leaseExpiresAt: null,
        duplicateCount: 0,
        lastDuplicateAt: null,
      }),
      [],
      NOW,
    );
    expect(e.fate).toBe("expired");
    expect(e.sentence).toMatch(/key expired at 2026-11-08T10:00:00.000Z and is waiting to be pruned/);
  });

  it("a pruned key: processed at T, key expired at T2 (from the last claim's detail) and was pruned", () => {
    const timeline = [
      audit("claimed", "2026-09-01T10:00:00.000001Z", { expiresAt: "2026-09-08T10:00:00+00:00" }),
      audit("reclaimed_after_expiry", "2026-10-01T10:00:00Z", { expiresAt: "2026-10-08T10:00:00.5+00:00" }),
    ];
    const e = explainEvent(key(null), timeline, NOW);
    expect(e.fate).toBe("pruned");
    expect(e.sentence).toBe("Processed at 2026-10-01T10:00:00.000Z; key expired at 2026-10-08T10:00:00.500Z and was pruned.");
    expect(e).toMatchObject({ keyExpiresAt: "2026-10-08T10:00:00.500Z", duplicateCount: null, status: null, claims: 2 });
    expect(e.firstSeenAt).toBe("2026-09-01T10:00:00.000Z");
  });

  it("a leased claim never completed before the prune says so", () => {
    const e = explainEvent(
      key(null),
      [audit("claimed", "2026-10-01T10:00:00Z", { expiresAt: "2026-10-08T10:00:00Z", leaseExpiresAt: "2026-10-01T10:05:00Z" })],
      NOW,
    );
    expect(e.sentence).toMatch(/^Claimed \(never completed\) at 2026-10-01T10:00:00.000Z; key expired/);
    const done = explainEvent(
      key(null),
      [
        audit("claimed", "2026-10-01T10:00:00Z", { expiresAt: "2026-10-08T10:00:00Z", leaseExpiresAt: "2026-10-01T10:05:00Z" }),
        audit("completed", "2026-10-01T10:01:00Z"),
      ],
      NOW,
    );
    expect(done.sentence).toMatch(/^Processed at/);
    expect(done.completedAt).toBe("2026-10-01T10:01:00.000Z");
  });

  it("a released key: claimed then released, the next delivery is processed again", () => {
    const e = explainEvent(
      key(null),
      [audit("claimed", "2026-12-01T10:00:00Z", { expiresAt: "2026-12-08T10:00:00Z" }), audit("released", "2026-12-01T10:02:00Z")],
      NOW,
    );
    expect(e.fate).toBe("released");
    expect(e.releasedAt).toBe("2026-12-01T10:02:00.000Z");
  });

  it("no key and no history: never seen; unknown kinds and operator rows alone do not make it seen", () => {
    expect(explainEvent(key(null), [], NOW)).toMatchObject({ fate: "never_seen", processedAt: null, claims: 0 });
    const e = explainEvent(key(null), [audit("dead_lettered", "2026-12-01T10:00:00Z", { reason: "x" }), audit("operator", "2026-12-01T10:00:01Z")], NOW);
    expect(e.fate).toBe("never_seen");
    expect(e.eventType).toBe("invoice.paid");
  });

  it("a claim whose key vanished before its expiry is reported as missing, not pruned", () => {
    const e = explainEvent(key(null), [audit("claimed", "2026-12-01T10:00:00Z", { expiresAt: "2026-12-08T10:00:00Z" })], NOW);
    expect(e.fate).toBe("missing");
    expect(e.sentence).toMatch(/deleted outside Keyward/);
  });
});

describe("resolveRange", () => {
  const err = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return e as KeywardError;
    }
    throw new Error("did not throw");
  };

  it("defaults to the last 30 days, or the whole retention for an exact event id", () => {
    expect(resolveRange({}, NOW, 400)).toEqual({ from: new Date("2026-11-02T12:00:00.000Z"), to: null });
    expect(resolveRange({ eventId: "e" }, NOW, 400).from).toEqual(new Date(NOW.getTime() - 400 * 86400_000));
    expect(resolveRange({ to: "2026-06-30T00:00:00Z" }, NOW, 400).from).toEqual(new Date("2026-05-31T00:00:00.000Z"));
  });

  it("refuses a range wider than the retention, and one that ends before it starts (422)", () => {
    const wide = err(() => resolveRange({ from: "2025-01-01T00:00:00Z" }, NOW, 400));
    expect(wide.status).toBe(422);
    expect(wide.code).toBe("range_too_wide");
    expect(wide.message).toMatch(/wider than the audit retention of 400 days/);
    const backwards = err(() => resolveRange({ from: "2026-12-01T00:00:00Z", to: "2026-11-01T00:00:00Z" }, NOW, 400));
    expect(backwards.code).toBe("invalid_range");
    expect(resolveRange({ from: "2025-11-02T12:00:00Z" }, NOW, 400).from.toISOString()).toBe("2025-11-02T12:00:00.000Z");
  });
});

describe("search query validation", () => {
  it("accepts a well-formed unknown kind, refuses a malformed one, caps limit at 500, and wants real cursors", () => {
    expect(auditSearchQuery.safeParse({ kind: "dead_lettered" }).success).toBe(true);
    expect(auditSearchQuery.safeParse({ kind: "some_future_kind" }).success).toBe(true);
    expect(auditSearchQuery.safeParse({ kind: "Drop Table" }).success).toBe(false);
    expect(auditSearchQuery.safeParse({ limit: "501" }).success).toBe(false);
    expect(auditSearchQuery.safeParse({ limit: "500" }).success).toBe(true);
    expect(auditSearchQuery.safeParse({ cursor: encodeCursor({ at: "2026-12-02T10:00:00.123456Z", id: "42" }) }).success).toBe(true);
    expect(auditSearchQuery.safeParse({ cursor: "2026-12-02T10:00:00.123456Z_42" }).success).toBe(false);
    expect(auditSearchQuery.safeParse({ cursor: "yesterday_42" }).success).toBe(false);
    expect(auditSearchQuery.safeParse({ from: "last week" }).success).toBe(false);
    expect(auditSearchQuery.safeParse({ offset: "10" }).success).toBe(false);
  });
});

describe("helpers", () => {
  it("likePrefix matches LIKE's wildcards literally", () => {
    expect(likePrefix("evt_1%\\")).toBe("evt\\_1\\%\\\\%");
  });

  it("csvCell defuses spreadsheet formulas and leaves other text alone", () => {
    expect(csvCell("=HYPERLINK(\"x\")")).toBe("'=HYPERLINK(\"x\")");
    for (const c of ["+1", "-1", "@SUM(A1)", "\tx", "\rx"]) expect(csvCell(c)).toBe(`'${c}`);
    expect(csvCell("evt_1")).toBe("evt_1");
    expect(csvCell(null)).toBe("");
  });
});
