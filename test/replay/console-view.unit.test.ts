/** The Replay screen's pure side (components/replay/categories.ts, dead-letter-list.ts, key-risk.ts, wizard.ts, progress.ts): categories, counts, keys at risk, the wizard and its confirm rule, progress. Pure; no database. */
import { describeSchedule, describeWait } from "@/components/replay/progress";
import { describe, expect, it } from "vitest";
import { CATEGORY_INFO, categoryRows, itemsByCategory } from "@/components/replay/categories";
import {
  checkConfirm,
  confirmMatches,
  confirmPhrase,
  defaultInclude,
  describeSelection,
  idempotencyKeyFor,
  includable,
  needsExtend,
  preflightBody,
  preflightValidity,
  replayCount,
  selectionFromChecked,
  selectionFromFilters,
  type ConfirmState,
  WIZARD_START,
  wizardReducer,
  currentStep,
  type WizardEvent,
  type WizardState,
} from "@/components/replay/wizard";
import { countRows, filterParams } from "@/components/replay/dead-letter-list";
import { describeExpiry, keyRiskHeadline, keysAtRisk } from "@/components/replay/key-risk";
import { isoToLocalInput, localInputToIso } from "@/components/ui/datetime-input";
import { outcomeRows, pollInterval, replayControls, replayHeadline, replayProgress } from "@/components/replay/progress";
import type { DeadLetter } from "@/lib/deadletters/schema";
import type { Preflight, PreflightCounts, PreflightItem, ReplaySummary } from "@/lib/replay/schema";

const NOW = Date.parse("2026-12-02T12:00:00Z");
const H = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

/** A dead letter; its key `processed` unless said otherwise (the audit history says it was processed). */
function dl({ key, ...over }: Omit<Partial<DeadLetter>, "key"> & { id: string; key?: Omit<DeadLetter["key"], "processed"> & { processed?: boolean } }): DeadLetter {
  return {
    key: { state: "alive", expiresAt: iso(NOW + 48 * H), ...key, processed: key?.processed ?? true },
    source: "billing",
    eventId: `evt_${over.id}`,
    eventType: "charge",
    error: "timeout",
    attempts: 3,
    failedAt: iso(NOW - 10 * H),
    queue: null,
    status: "pending",
    receivedAt: iso(NOW - 10 * H),
    settledAt: null,
    ...over,
  };
}

const counts = (over: Partial<PreflightCounts>): PreflightCounts => {
  const c = { alive: 0, expiring: 0, expired_processed: 0, never_processed: 0, in_flight: 0, ...over };
  return { ...c, total: c.alive + c.expiring + c.expired_processed + c.never_processed + c.in_flight };
};

const preflight = (c: Partial<PreflightCounts>, extendedAt: string | null = null): Preflight => ({
  preflightId: "pf_1",
  source: "billing",
  createdAt: iso(NOW),
  validUntil: iso(NOW + 15 * 60_000),
  windowSeconds: 3600,
  extendedAt,
  truncated: false,
  retryOf: null,
  counts: counts(c),
  items: [],
  checks: [],
  ready: true,
  retryDefault: { maxAttempts: 12, initialDelaySeconds: 10, maxDelaySeconds: 3600 },
});

describe("categories", () => {
  it("lists the five categories in a fixed order with their counts and plain-words meaning", () => {
    const rows = categoryRows(counts({ alive: 3, expiring: 1, never_processed: 2 }));
    expect(rows.map((r) => [r.category, r.count])).toEqual([
      ["alive", 3],
      ["expiring", 1],
      ["expired_processed", 0],
      ["never_processed", 2],
      ["in_flight", 0],
    ]);
    expect(CATEGORY_INFO.alive.explanation).toMatch(/claim will reject the replay as a duplicate/);
    expect(CATEGORY_INFO.expiring.explanation).toMatch(/extend first/);
    expect(CATEGORY_INFO.expired_processed.explanation).toMatch(/process it twice.*force it with a reason/);
    expect(CATEGORY_INFO.never_processed.explanation).toMatch(/safe to replay/);
    expect(CATEGORY_INFO.in_flight.explanation).toMatch(/wait/);
  });

  it("groups a preflight's items by category, every category present", () => {
    const item = (id: string, category: PreflightItem["category"]): PreflightItem => ({
      deadLetterId: id,
      eventId: id,
      eventType: "t",
      category,
      keyExpiresAt: null,
      processedAt: null,
      reason: "r",
    });
    const g = itemsByCategory([item("a", "alive"), item("b", "in_flight"), item("c", "alive")]);
    expect(g.alive.map((i) => i.deadLetterId)).toEqual(["a", "c"]);
    expect(g.in_flight).toHaveLength(1);
    expect(g.expired_processed).toEqual([]);
  });
});

describe("countRows", () => {
  it("sorts largest first, gives whole-percent shares and cuts long labels but keeps the key", () => {
    const long = "x".repeat(100);
    const rows = countRows(
      [
        { key: "b", count: 1 },
        { key: long, count: 3 },
        { key: "a", count: 1 },
      ],
      5,
      10,
    );
    expect(rows.map((r) => [r.label, r.count, r.percent])).toEqual([
      ["xxxxxxxxx…", 3, 60],
      ["a", 1, 20],
      ["b", 1, 20],
    ]);
    expect(rows[0].key).toBe(long);
    expect(countRows([{ key: "a", count: 0 }], 0)[0].percent).toBe(0);
  });
});

describe("keysAtRisk", () => {
  it("keeps pending ones with no live key that were processed (at risk), or protected by a key expiring within 24 h, soonest (oldest) first", () => {
    const items = [
      dl({ id: "later", key: { state: "alive", expiresAt: iso(NOW + 20 * H) } }),
      dl({ id: "safe", key: { state: "alive", expiresAt: iso(NOW + 30 * H) } }),
      dl({ id: "gone-long", key: { state: "expired", expiresAt: iso(NOW - 5 * H) } }),
      dl({ id: "soon", key: { state: "alive", expiresAt: iso(NOW + 1 * H) } }),
      dl({ id: "gone-recent", key: { state: "expired", expiresAt: iso(NOW - 1 * H) } }),
      dl({ id: "gone-unknown", key: { state: "expired", expiresAt: null } }),
      dl({ id: "never", key: { state: "none", expiresAt: null } }),
      // No live key, but never processed (never claimed, or released): a replay is safe, not at risk.
      dl({ id: "never-claimed", key: { state: "none", expiresAt: null, processed: false } }),
      dl({ id: "released", key: { state: "expired", expiresAt: iso(NOW - 2 * H), processed: false } }),
      dl({ id: "delivered", status: "delivered", key: { state: "expired", expiresAt: iso(NOW - H) } }),
      dl({ id: "flight", key: { state: "in_flight", expiresAt: iso(NOW + 2 * H) } }),
      dl({ id: "flight-later", key: { state: "in_flight", expiresAt: iso(NOW + 30 * H) } }),
    ];
    const risks = keysAtRisk(items, NOW);
    expect(risks.map((r) => r.item.id)).toEqual(["gone-unknown", "never", "gone-long", "gone-recent", "soon", "flight", "later"]);
    expect(risks.map((r) => r.expired)).toEqual([true, true, true, true, false, false, false]);
    expect(risks.map((r) => r.label)).toEqual([
      "expired",
      "no live key",
      "expired 5h ago",
      "expired 1h ago",
      "protected, expires in 1h",
      "protected, expires in 2h",
      "protected, expires in 20h",
    ]);
    // The preflight's verdict on each (issue 23 §5: the panel never calls a protected letter at risk).
    expect(risks.map((r) => r.verdict)).toEqual(["expired_processed", "expired_processed", "expired_processed", "expired_processed", "alive", "in_flight", "alive"]);
  });

  it("counts a key whose expiry passed as expired even if the list said alive", () => {
    const [r] = keysAtRisk([dl({ id: "x", key: { state: "alive", expiresAt: iso(NOW - 60_000) } })], NOW);
    expect(r.expired).toBe(true);
  });

  it("breaks ties by the older failure", () => {
    const at = iso(NOW + H);
    const risks = keysAtRisk(
      [
        dl({ id: "new", failedAt: iso(NOW - H), key: { state: "alive", expiresAt: at } }),
        dl({ id: "old", failedAt: iso(NOW - 5 * H), key: { state: "alive", expiresAt: at } }),
      ],
      NOW,
    );
    expect(risks.map((r) => r.item.id)).toEqual(["old", "new"]);
  });

  it("describes expiry in minutes and says so under a minute", () => {
    expect(describeExpiry(NOW + 90 * 60_000, NOW)).toBe("expires in 1h30m");
    expect(describeExpiry(NOW + 10_000, NOW)).toBe("expires in less than a minute");
    expect(describeExpiry(null, NOW)).toBe("expired");
  });

  it("words the panel's title and headline from the server's counts: protected letters are not called at risk", () => {
    expect(keyRiskHeadline({ expired: 0, expiringSoon: 0 })).toBeNull();
    expect(keyRiskHeadline({ expired: 1, expiringSoon: 0 })).toEqual({
      title: "Keys at risk",
      text: "Pending dead letters at risk: 1 processed before and no live key any more (a replay would process it twice).",
    });
    expect(keyRiskHeadline({ expired: 2, expiringSoon: 1200 })).toEqual({
      title: "Keys at risk",
      text: "Pending dead letters at risk: 2 processed before and no live key any more (a replay would process them twice). 1,200 are still protected by a live key that expires within 24 h: replay or extend them before then.",
    });
    expect(keyRiskHeadline({ expired: 0, expiringSoon: 4 })).toEqual({
      title: "Keys expiring within 24 h",
      text: "No pending dead letter is at risk now; 4 are still protected by a live key that expires within 24 h: replay or extend them before then.",
    });
  });
});

describe("filters and selection", () => {
  it("turns filters into the list's query string, leaving empty ones out", () => {
    expect(filterParams({ source: "billing", errorContains: "", status: "pending" }, { limit: "100" }).toString()).toBe(
      "source=billing&status=pending&limit=100",
    );
  });

  it("round-trips a datetime-local value through ISO", () => {
    const isoValue = localInputToIso("2026-12-01T08:30");
    expect(isoValue).toMatch(/^2026-12-0\dT\d\d:30:00\.000Z$/);
    expect(isoToLocalInput(isoValue)).toBe("2026-12-01T08:30");
    expect(localInputToIso("")).toBeUndefined();
    expect(localInputToIso("not a date")).toBeUndefined();
  });

  it("selects every pending dead letter of the filtered source, and needs a source", () => {
    expect(selectionFromFilters({ status: "pending" })).toEqual({ ok: false, error: expect.stringMatching(/source/) });
    const r = selectionFromFilters({ source: "billing", errorContains: "503", status: "delivered" });
    expect(r).toEqual({ ok: true, selection: { kind: "filter", source: "billing", filter: { errorContains: "503" } } });
    if (r.ok) {
      expect(preflightBody(r.selection)).toEqual({ source: "billing", filter: { errorContains: "503" } });
      expect(describeSelection(r.selection)).toBe("every pending dead letter of billing (error contains “503”)");
    }
  });

  it("selects checked rows only when pending and of one source", () => {
    expect(selectionFromChecked([]).ok).toBe(false);
    expect(selectionFromChecked([dl({ id: "a" }), dl({ id: "b", source: "other" })])).toEqual({
      ok: false,
      error: "The checked dead letters come from 2 sources; a replay covers one source.",
    });
    expect(selectionFromChecked([dl({ id: "a", status: "delivered" })])).toEqual({ ok: false, error: "1 checked dead letter is not pending." });
    const r = selectionFromChecked([dl({ id: "a" }), dl({ id: "b" })]);
    expect(r.ok && preflightBody(r.selection)).toEqual({ source: "billing", deadLetterIds: ["a", "b"] });
    expect(r.ok && describeSelection(r.selection)).toBe("2 checked dead letters of billing");
  });
});

describe("preflight validity and extend", () => {
  it("counts down m:ss and turns stale at validUntil", () => {
    const p = preflight({ alive: 1 });
    expect(preflightValidity(p.validUntil, NOW)).toEqual({ stale: false, secondsLeft: 900, label: "valid for 15:00" });
    expect(preflightValidity(p.validUntil, NOW + 14 * 60_000 + 51_000).label).toBe("valid for 0:09");
    expect(preflightValidity(p.validUntil, NOW + 15 * 60_000).stale).toBe(true);
  });

  it("asks for the extend step only when keys expire inside the window and were not extended", () => {
    expect(needsExtend(preflight({ alive: 2 }))).toBe(false);
    expect(needsExtend(preflight({ expiring: 1 }))).toBe(true);
    expect(needsExtend(preflight({ expiring: 1 }, iso(NOW)))).toBe(false);
  });
});

describe("the confirm step", () => {
  it("never offers in_flight, offers expiring only after extend, and nothing empty", () => {
    const p = preflight({ alive: 1, expiring: 2, in_flight: 1, expired_processed: 1 });
    expect(includable("in_flight", p)).toBe(false);
    expect(includable("expiring", p)).toBe(false);
    expect(includable("expiring", { ...p, extendedAt: iso(NOW) })).toBe(true);
    expect(includable("never_processed", p)).toBe(false);
    expect(includable("expired_processed", p)).toBe(true);
  });

  it("ticks alive, expiring (once extended) and never_processed by default, never expired_processed", () => {
    const c = { alive: 1, expiring: 2, expired_processed: 3, never_processed: 4 };
    expect(defaultInclude(preflight(c))).toEqual(["alive", "never_processed"]);
    expect(defaultInclude(preflight(c, iso(NOW)))).toEqual(["alive", "expiring", "never_processed"]);
    expect(replayCount(counts(c), ["alive", "never_processed"])).toBe(5);
  });

  it("confirms with the count, or with the source's name when forced", () => {
    expect(confirmPhrase("billing", 12, false)).toBe("12");
    expect(confirmPhrase("billing", 12, true)).toBe("billing");
    expect(confirmMatches(" 1,200 ", "1200", false)).toBe(true);
    expect(confirmMatches("120", "1200", false)).toBe(false);
    expect(confirmMatches("billing ", "billing", true)).toBe(true);
    expect(confirmMatches("Billing", "billing", true)).toBe(false);
  });

  const state = (over: Partial<ConfirmState>): ConfirmState => ({ include: ["alive", "never_processed"], reason: "", typed: "", rate: "50", ...over });

  it("builds the body once the count is typed", () => {
    const p = preflight({ alive: 2, never_processed: 3, expired_processed: 1 });
    const notYet = checkConfirm(p, state({ typed: "4" }));
    expect(notYet).toEqual({ ok: false, count: 5, problems: ["Type the number of events, 5, to confirm."] });
    expect(checkConfirm(p, state({ typed: "5" }))).toEqual({
      ok: true,
      count: 5,
      body: { preflightId: "pf_1", include: ["alive", "never_processed"], ratePerSecond: 50, concurrency: 4 },
    });
  });

  it("makes a forced replay need a reason and the source's name", () => {
    const p = preflight({ alive: 2, expired_processed: 1 });
    const include: ConfirmState["include"] = ["expired_processed", "alive"];
    const r = checkConfirm(p, state({ include, typed: "3", reason: "short" }));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems).toEqual([
      "A forced replay needs a reason of at least 10 characters.",
      "Type the source name, billing, to confirm.",
    ]);
    expect(checkConfirm(p, state({ include, typed: "billing", reason: "  customer asked for a re-send  " }))).toEqual({
      ok: true,
      count: 3,
      body: { preflightId: "pf_1", include: ["alive", "expired_processed"], force: { reason: "customer asked for a re-send" }, ratePerSecond: 50, concurrency: 4 },
    });
  });

  it("refuses a rate outside 1..500, a concurrency outside 1..32, expiring before extend, and an empty replay", () => {
    const p = preflight({ alive: 1, expiring: 1 });
    expect(checkConfirm(p, state({ rate: "501", typed: "1", include: ["alive"] }))).toMatchObject({
      ok: false,
      problems: ["Rate must be a whole number from 1 to 500 per second."],
    });
    expect(checkConfirm(p, state({ rate: "2.5", typed: "1", include: ["alive"] })).ok).toBe(false);
    expect(checkConfirm(p, state({ concurrency: "33", typed: "1", include: ["alive"] }))).toMatchObject({
      ok: false,
      problems: ["Concurrency must be a whole number from 1 to 32 deliveries at a time."],
    });
    expect(checkConfirm(p, state({ concurrency: "0", typed: "1", include: ["alive"] })).ok).toBe(false);
    expect(checkConfirm(p, state({ concurrency: " 16 ", typed: "1", include: ["alive"] }))).toMatchObject({
      ok: true,
      body: { ratePerSecond: 50, concurrency: 16 },
    });
    expect(checkConfirm(p, state({ typed: "2", include: ["alive", "expiring"] }))).toMatchObject({
      ok: false,
      problems: ["Key expiring cannot be included before the keys are extended."],
    });
    expect(checkConfirm(p, state({ include: [] }))).toMatchObject({ ok: false, count: 0, problems: [expect.stringMatching(/Nothing to replay/)] });
  });

  it("keeps the Idempotency-Key while the body is the same, and takes a fresh one when it changes", () => {
    let n = 0;
    const fresh = () => `key-${++n}`;
    const body = { preflightId: "pf_1", include: ["alive" as const], ratePerSecond: 50, concurrency: 4 };
    const first = idempotencyKeyFor(null, body, fresh);
    expect(first.key).toBe("key-1");
    expect(idempotencyKeyFor(first, { ...body }, fresh).key).toBe("key-1");
    expect(idempotencyKeyFor(first, { ...body, ratePerSecond: 60 }, fresh).key).toBe("key-2");
  });
});

describe("progress", () => {
  const summary = (over: Partial<ReplaySummary>): Pick<ReplaySummary, "total" | "counts" | "status"> => ({
    total: 10,
    status: "running",
    counts: { pending: 10, delivering: 0, delivered: 0, failed: 0, skipped_unsafe: 0, cancelled: 0 },
    ...over,
  });

  it("counts settled items and floors the percentage, so 100 % means all settled", () => {
    expect(replayProgress(summary({}))).toEqual({ done: 0, percent: 0 });
    const r = summary({ total: 3, counts: { pending: 0, delivering: 1, delivered: 1, failed: 1, skipped_unsafe: 0, cancelled: 0 } });
    expect(replayProgress(r)).toEqual({ done: 2, percent: 66 });
    expect(replayProgress(summary({ total: 0, status: "completed" })).percent).toBe(100);
    expect(replayProgress(summary({ total: 0 })).percent).toBe(0);
  });

  it("polls every second while running, slower while paused, not once finished", () => {
    expect(pollInterval("running")).toBe(1000);
    expect(pollInterval("paused")).toBe(5000);
    expect(pollInterval("completed")).toBe(false);
    expect(pollInterval("cancelled")).toBe(false);
    expect(pollInterval(undefined)).toBe(1000);
  });

  it("offers pause while running, resume while paused, cancel until finished", () => {
    expect(replayControls("running")).toEqual({ pause: true, resume: false, cancel: true });
    expect(replayControls("paused")).toEqual({ pause: false, resume: true, cancel: true });
    expect(replayControls("completed")).toEqual({ pause: false, resume: false, cancel: false });
  });

  it("shows settled outcomes always and in-progress ones while non-zero; words the headline", () => {
    const running = summary({ counts: { pending: 0, delivering: 2, delivered: 8, failed: 0, skipped_unsafe: 0, cancelled: 0 } });
    expect(outcomeRows(running.counts).map((o) => o.outcome)).toEqual(["delivered", "failed", "skipped_unsafe", "cancelled", "delivering"]);
    expect(replayHeadline(running)).toBe("8 of 10 settled.");
    expect(replayHeadline({ ...running, status: "paused" })).toBe("8 of 10 settled (paused).");
    const done = summary({ status: "completed", counts: { pending: 0, delivering: 0, delivered: 8, failed: 1, skipped_unsafe: 1, cancelled: 0 } });
    expect(replayHeadline(done)).toBe("Partly delivered: 8 delivered, 1 failed, 1 skipped as unsafe of 10.");
  });
});

describe("the wizard's steps", () => {
  const run = (events: WizardEvent[], from: WizardState = WIZARD_START) => events.reduce(wizardReducer, from);
  const expiring = preflight({ alive: 2, expiring: 1 });
  const safe = preflight({ never_processed: 3 });

  it("goes select → preflight → confirm → run → results when no key expires inside the window", () => {
    const confirm = run([{ type: "preflighted", preflight: safe }, { type: "next" }]);
    expect(confirm).toEqual({ step: "confirm", preflight: safe, extended: null });
    const started = run([{ type: "started", replayId: "r1" }], confirm);
    expect(started).toEqual({ step: "run", replayId: "r1", finished: false });
    expect(currentStep(started)).toBe("run");
    expect(currentStep(run([{ type: "finished" }], started))).toBe("results");
  });

  it("\"Retry failed items\" on the results step opens the new preflight (only once the run finished)", () => {
    const started = run([{ type: "preflighted", preflight: safe }, { type: "next" }, { type: "started", replayId: "r1" }]);
    const retry = preflight({ never_processed: 2 });
    expect(run([{ type: "retried", preflight: retry }], started)).toEqual(started);
    const finished = run([{ type: "finished" }], started);
    expect(run([{ type: "retried", preflight: retry }], finished)).toEqual({ step: "preflight", preflight: retry, extended: null });
  });

  it("does not go past a preflight whose readiness checks fail (Start would refuse after the count was typed)", () => {
    const notReady = { ...safe, ready: false };
    expect(run([{ type: "preflighted", preflight: notReady }, { type: "next" }])).toEqual({ step: "preflight", preflight: notReady, extended: null });
  });

  it("stops at the extend step when keys expire inside the window; back from confirm returns to it once extended", () => {
    const atExtend = run([{ type: "preflighted", preflight: expiring }, { type: "next" }]);
    expect(atExtend.step).toBe("extend");
    const extendedPreflight = preflight({ alive: 3 }, iso(NOW));
    const extended = run([{ type: "extended", preflight: extendedPreflight, extended: 3 }], atExtend);
    expect(extended).toEqual({ step: "extend", preflight: extendedPreflight, extended: 3 });
    const confirm = run([{ type: "next" }], extended);
    expect(confirm.step).toBe("confirm");
    expect(run([{ type: "back" }], confirm).step).toBe("extend");
    // Skipped without extending: back from confirm still offers the extend step, since keys still expire.
    expect(run([{ type: "next" }, { type: "back" }], atExtend).step).toBe("extend");
    expect(run([{ type: "back" }, { type: "back" }], atExtend)).toEqual({ step: "select" });
  });

  it("reviews a re-run preflight afresh, and ignores events that do not apply to the step", () => {
    const confirm = run([{ type: "preflighted", preflight: expiring }, { type: "next" }, { type: "extended", preflight: expiring, extended: 1 }, { type: "next" }]);
    expect(run([{ type: "preflighted", preflight: safe }], confirm)).toEqual({ step: "preflight", preflight: safe, extended: null });
    expect(run([{ type: "next" }, { type: "started", replayId: "r" }, { type: "finished" }])).toBe(WIZARD_START);
    const running: WizardState = { step: "run", replayId: "r", finished: false };
    expect(run([{ type: "back" }, { type: "preflighted", preflight: safe }], running)).toBe(running);
  });
});

describe("retry schedule and waits in words", () => {
  it("names the schedule and the time to the next attempt", () => {
    expect(describeSchedule({ maxAttempts: 12, initialDelaySeconds: 10, maxDelaySeconds: 3600 })).toBe("up to 12 attempts, waits from 10s doubling to 1h (jittered)");
    expect(describeSchedule({ maxAttempts: 1, initialDelaySeconds: 10, maxDelaySeconds: 3600 })).toBe("1 attempt, no retries");
    expect(describeWait(new Date(NOW + 41_200).toISOString(), NOW)).toBe("in 42 s");
    expect(describeWait(new Date(NOW + 65 * 60_000).toISOString(), NOW)).toBe("in 1h5m");
    expect(describeWait(new Date(NOW - 5000).toISOString(), NOW)).toBe("due now");
  });
});
