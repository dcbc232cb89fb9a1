/** The preflight classification and the re-check before each send: pure, every branch and boundary. */
import { describe, expect, it } from "vitest";
import {
  classifyOne,
  classifyReplayBatch,
  countCategories,
  recheckBeforeSend,
  SEND_MARGIN_SECONDS,
  type AuditFact,
  type KeyFact,
} from "@/lib/replay/classify";

const NOW = new Date("2026-12-03T12:00:00.000Z");
const WINDOW = 3600;
const at = (secondsFromNow: number) => new Date(NOW.getTime() + secondsFromNow * 1000);
const item = { deadLetterId: "00000000-0000-4000-8000-000000000001", eventId: "evt_1", eventType: "t" };
const key = (expiresIn: number, o: Partial<KeyFact> = {}): KeyFact => ({
  eventId: "evt_1",
  expiresAt: at(expiresIn),
  status: "done",
  leaseExpiresAt: null,
  ...o,
});
const fact = (lastKind: AuditFact["lastKind"], secondsAgo = 100): AuditFact => ({ eventId: "evt_1", lastKind, lastAt: at(-secondsAgo) });
const classify = (k?: KeyFact, f?: AuditFact, window = WINDOW) => classifyOne(item, k, f, NOW, window);

describe("classifyOne: live keys", () => {
  it("alive when the key outlives the window, by one millisecond", () => {
    const c = classify(key(WINDOW + 0.001), fact("completed"));
    expect(c.category).toBe("alive");
    expect(c.keyExpiresAt).toEqual(at(WINDOW + 0.001));
    expect(c.processedAt).toEqual(at(-100));
    expect(c.reason).toMatch(/rejected by the claim/);
  });

  it("expiring when the key expires exactly when the window ends (a key is dead at its expires_at)", () => {
    expect(classify(key(WINDOW), fact("claimed")).category).toBe("expiring");
  });

  it("expiring when the key expires within the window", () => {
    const c = classify(key(10), fact("claimed"));
    expect(c.category).toBe("expiring");
    expect(c.reason).toMatch(/extend it first/);
  });

  it("a window of 0: any live key is alive", () => {
    expect(classify(key(0.001), fact("claimed"), 0).category).toBe("alive");
  });

  it("in_flight while a lease runs, whatever the expiry", () => {
    expect(classify(key(WINDOW * 10, { status: "processing", leaseExpiresAt: at(30) }), fact("claimed")).category).toBe("in_flight");
    expect(classify(key(10, { status: "processing", leaseExpiresAt: at(5) }), fact("claimed")).category).toBe("in_flight");
  });

  it("a lapsed lease (or one ending exactly now) is classified by the key's expiry, and says it will be taken over", () => {
    const lapsed = classify(key(WINDOW * 2, { status: "processing", leaseExpiresAt: at(-1) }), fact("claimed"));
    expect(lapsed.category).toBe("alive");
    expect(lapsed.reason).toMatch(/lease lapsed/);
    expect(classify(key(60, { status: "processing", leaseExpiresAt: at(0) }), fact("claimed")).category).toBe("expiring");
  });

  it("a reclaimed key (expired, then claimed again) is a live key again", () => {
    expect(classify(key(WINDOW * 2), fact("reclaimed_after_expiry", 5)).category).toBe("alive");
  });
});

describe("classifyOne: no live key", () => {
  it("a key expiring exactly now is not live", () => {
    expect(classify(key(0), fact("completed")).category).toBe("expired_processed");
  });

  it("expired_processed for each processing kind as the newest deciding row", () => {
    for (const kind of ["claimed", "lease_takeover", "reclaimed_after_expiry", "completed"] as const) {
      const c = classify(key(-10), fact(kind));
      expect(c.category, kind).toBe("expired_processed");
      expect(c.processedAt, kind).toEqual(at(-100));
      expect(c.keyExpiresAt).toEqual(at(-10));
    }
  });

  it("expired_processed also when the pruner already deleted the key", () => {
    const c = classify(undefined, fact("completed"));
    expect(c.category).toBe("expired_processed");
    expect(c.keyExpiresAt).toBeNull();
    expect(c.reason).toMatch(/processes it twice/);
  });

  it("never_processed when released after its claim", () => {
    const c = classify(undefined, fact("released"));
    expect(c.category).toBe("never_processed");
    expect(c.processedAt).toBeNull();
    expect(c.reason).toMatch(/released/);
  });

  it("never_processed when never claimed (no key, no audit rows)", () => {
    const c = classify(undefined, undefined);
    expect(c.category).toBe("never_processed");
    expect(c.reason).toMatch(/no one ever claimed it/);
  });

  it("an expired key whose newest deciding row is a release: never_processed", () => {
    expect(classify(key(-1), fact("released")).category).toBe("never_processed");
  });
});

describe("classifyReplayBatch", () => {
  it("matches keys and facts by event id, keeps input order, and counts", () => {
    const items = ["a", "b", "c", "d", "e"].map((e, i) => ({ deadLetterId: `id-${i}`, eventId: e, eventType: "t" }));
    const keys: KeyFact[] = [
      { eventId: "a", expiresAt: at(WINDOW * 2), status: "done", leaseExpiresAt: null },
      { eventId: "b", expiresAt: at(60), status: "done", leaseExpiresAt: null },
      { eventId: "e", expiresAt: at(WINDOW * 2), status: "processing", leaseExpiresAt: at(60) },
    ];
    const facts: AuditFact[] = [
      { eventId: "a", lastKind: "completed", lastAt: at(-5) },
      { eventId: "c", lastKind: "completed", lastAt: at(-5) },
      { eventId: "d", lastKind: "released", lastAt: at(-5) },
    ];
    const out = classifyReplayBatch(items, keys, facts, NOW, WINDOW);
    expect(out.map((o) => [o.eventId, o.category])).toEqual([
      ["a", "alive"],
      ["b", "expiring"],
      ["c", "expired_processed"],
      ["d", "never_processed"],
      ["e", "in_flight"],
    ]);
    expect(countCategories(out)).toEqual({ alive: 1, expiring: 1, expired_processed: 1, never_processed: 1, in_flight: 1, total: 5 });
  });

  it("two dead letters of one event get the same category", () => {
    const items = [
      { deadLetterId: "x", eventId: "a", eventType: "t" },
      { deadLetterId: "y", eventId: "a", eventType: "t" },
    ];
    const out = classifyReplayBatch(items, [], [{ eventId: "a", lastKind: "claimed", lastAt: at(-1) }], NOW, WINDOW);
    expect(out.map((o) => o.category)).toEqual(["expired_processed", "expired_processed"]);
  });
});

describe("recheckBeforeSend", () => {
  const plain = { category: "alive" as const, forced: false };

  it("safe while the key lives past the send margin", () => {
    expect(recheckBeforeSend(key(SEND_MARGIN_SECONDS + 1), fact("completed"), NOW, plain).safe).toBe(true);
  });

  it("safe while a lease runs on a live key (the destination's claim answers in_flight)", () => {
    expect(recheckBeforeSend(key(3600, { status: "processing", leaseExpiresAt: at(30) }), fact("claimed"), NOW, plain).safe).toBe(true);
  });

  it("unsafe when a processed event's key expires within the margin, exactly at it, or is gone", () => {
    for (const k of [key(SEND_MARGIN_SECONDS), key(1), key(-1), undefined]) {
      const r = recheckBeforeSend(k, fact("completed"), NOW, plain);
      expect(r.safe).toBe(false);
      expect(r.reason).toMatch(/processed/);
    }
  });

  it("safe without a live key when it was never processed or was released", () => {
    expect(recheckBeforeSend(undefined, undefined, NOW, { category: "never_processed", forced: false }).safe).toBe(true);
    expect(recheckBeforeSend(key(-1), fact("released"), NOW, { category: "never_processed", forced: false }).safe).toBe(true);
  });

  it("a never_processed item that got processed since (key now expired) is skipped", () => {
    expect(recheckBeforeSend(key(-1), fact("claimed"), NOW, { category: "never_processed", forced: false }).safe).toBe(false);
  });

  it("a forced replay sends expired_processed items, and only those", () => {
    expect(recheckBeforeSend(undefined, fact("completed"), NOW, { category: "expired_processed", forced: true }).safe).toBe(true);
    expect(recheckBeforeSend(undefined, fact("completed"), NOW, { category: "expired_processed", forced: false }).safe).toBe(false);
    expect(recheckBeforeSend(undefined, fact("completed"), NOW, { category: "alive", forced: true }).safe).toBe(false);
  });
});
