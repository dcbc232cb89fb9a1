/**
 * One verdict on a key (lib/keys/verdict.ts): decideKey's branches, and every reading of it pinned to it
 * against the real database on a matrix of key states: the preflight's facts (replay/facts.ts readFacts),
 * the replay worker's lease batch (replay/worker-sql.ts LEASE_BATCH_SQL), the dead-letter list's `key`
 * (state and processed, in SQL), the preflight's categories and the "Keys at risk" counts (list and
 * metrics). A drift in any one of them (a third copy of the join, a changed CASE) fails here.
 */
import { afterAll, describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { completeClaim, releaseClaim } from "@/lib/claims/settle";
import { cliPrincipal } from "@/lib/auth/principal";
import { listDeadLetters } from "@/lib/deadletters/list";
import { keyRiskBySource } from "@/lib/deadletters/risk";
import { decideKey, keyFactsJoin, type KeyFacts, type KeyStateName } from "@/lib/keys/verdict";
import { categoryOf, verdictOf } from "@/lib/replay/classify";
import { FACTS_SQL, factsOfRow, readFacts } from "@/lib/replay/facts";
import { createPreflight } from "@/lib/replay/preflight";
import { LEASE_BATCH_SQL, type LeaseRow } from "@/lib/replay/worker-sql";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";

// Its expired keys must stay unpruned while it reads them: other files' servers prune the shared database.

const NOW = new Date("2026-06-01T12:00:00Z");
const at = (s: number) => new Date(NOW.getTime() + s * 1000);
const facts = (f: Partial<KeyFacts>): KeyFacts => ({ expiresAt: null, status: null, leaseExpiresAt: null, lastKind: null, lastAt: null, ...f });

describe("decideKey", () => {
  it("alive, in flight, expired, none by the key row; expires_at = now is expired, a lease ending now is not running", () => {
    expect(decideKey(facts({ expiresAt: at(1), status: "done" }), NOW).state).toBe("alive");
    expect(decideKey(facts({ expiresAt: at(0), status: "done" }), NOW).state).toBe("expired");
    expect(decideKey(facts({ expiresAt: at(9), status: "processing", leaseExpiresAt: at(1) }), NOW).state).toBe("in_flight");
    expect(decideKey(facts({ expiresAt: at(9), status: "processing", leaseExpiresAt: at(0) }), NOW).state).toBe("alive");
    expect(decideKey(facts({ expiresAt: at(-9), status: "processing", leaseExpiresAt: at(9) }), NOW).state).toBe("expired");
    expect(decideKey(facts({}), NOW).state).toBe("none");
  });

  it("processed: a live key, or a deciding row that is not a release; processedAt only from the audit", () => {
    const alive = decideKey(facts({ expiresAt: at(9), status: "done" }), NOW);
    expect([alive.processed, alive.processedAt]).toEqual([true, null]);
    for (const kind of ["claimed", "lease_takeover", "reclaimed_after_expiry", "completed"] as const) {
      const v = decideKey(facts({ lastKind: kind, lastAt: at(-5) }), NOW);
      expect([v.processed, v.processedAt, v.released], kind).toEqual([true, at(-5), false]);
    }
    const released = decideKey(facts({ lastKind: "released", lastAt: at(-5) }), NOW);
    expect([released.processed, released.processedAt, released.released]).toEqual([false, null, true]);
    expect(decideKey(facts({}), NOW).processed).toBe(false);
  });
});

type Expected = { state: KeyStateName; processed: boolean; category: string };

/** One event per key state, claimed, settled and aged for real; the window is 1 hour. */
async function matrix() {
  const source = await makeSource(7 * 86400, uniq("verdict"));
  const e = (n: string) => `${n}-${uniq("e")}`;
  const rows: [string, Expected, (id: string) => Promise<void>][] = [
    ["alive-done", { state: "alive", processed: true, category: "alive" }, async (id) => void (await claimEvent({ source, eventId: id, eventType: "t" }))],
    [
      "alive-expiring",
      { state: "alive", processed: true, category: "expiring" },
      async (id) => {
        await claimEvent({ source, eventId: id, eventType: "t" });
        await setKeyExpiry(source, id, 600);
      },
    ],
    ["in-flight", { state: "in_flight", processed: true, category: "in_flight" }, async (id) => void (await claimEvent({ source, eventId: id, eventType: "t", leaseSeconds: 600 }))],
    [
      "lease-lapsed",
      { state: "alive", processed: true, category: "alive" },
      async (id) => {
        await claimEvent({ source, eventId: id, eventType: "t", leaseSeconds: 600 });
        await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, id]);
      },
    ],
    [
      "expired-completed",
      { state: "expired", processed: true, category: "expired_processed" },
      async (id) => {
        const c = await claimEvent({ source, eventId: id, eventType: "t", leaseSeconds: 60 });
        await completeClaim({ source, eventId: id, claimToken: c.claimToken! });
        await setKeyExpiry(source, id, -10);
      },
    ],
    [
      "expired-claimed",
      { state: "expired", processed: true, category: "expired_processed" },
      async (id) => {
        await claimEvent({ source, eventId: id, eventType: "t" });
        await setKeyExpiry(source, id, -10);
      },
    ],
    [
      "pruned",
      { state: "none", processed: true, category: "expired_processed" },
      async (id) => {
        await claimEvent({ source, eventId: id, eventType: "t" });
        await sql("DELETE FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, id]);
      },
    ],
    [
      "released",
      { state: "none", processed: false, category: "never_processed" },
      async (id) => {
        const r = await claimEvent({ source, eventId: id, eventType: "t", leaseSeconds: 60 });
        await releaseClaim({ source, eventId: id, claimToken: r.claimToken! });
      },
    ],
    ["never-claimed", { state: "none", processed: false, category: "never_processed" }, async () => {}],
    [
      "reclaimed",
      { state: "alive", processed: true, category: "alive" },
      async (id) => {
        await claimEvent({ source, eventId: id, eventType: "t" });
        await setKeyExpiry(source, id, -10);
        await claimEvent({ source, eventId: id, eventType: "t" });
      },
    ],
    [
      "released-then-claimed",
      { state: "alive", processed: true, category: "alive" },
      async (id) => {
        const r = await claimEvent({ source, eventId: id, eventType: "t", leaseSeconds: 60 });
        await releaseClaim({ source, eventId: id, claimToken: r.claimToken! });
        await claimEvent({ source, eventId: id, eventType: "t" });
      },
    ],
  ];
  const cases = rows.map(([name, expected, setup]) => ({ name, id: e(name), expected, setup }));
  for (const c of cases) await c.setup(c.id);
  const letters = await seedDeadLetters(source, cases.map((c) => c.id));
  return { source, cases, letters };
}

const replays: string[] = [];
afterAll(async () => {
  if (replays.length) await sql("DELETE FROM replays WHERE id = ANY($1::uuid[])", [replays]);
});

describe("every reading of the key agrees with decideKey (real database)", () => {
  it("the preflight's facts, the worker's lease batch, the list's key, the preflight's categories and the risk counts", async () => {
    const { source, cases, letters } = await matrix();
    const expected = Object.fromEntries(cases.map((c) => [c.id, c.expected]));
    const unsafe = cases.filter((c) => c.expected.state === "none" || c.expected.state === "expired").filter((c) => c.expected.processed);

    // 1. The preflight's reading (replay/facts.ts), decided.
    const f = await readFacts(source, cases.map((c) => c.id));
    const byFacts = Object.fromEntries(
      cases.map((c) => {
        const v = verdictOf(f.keys.find((k) => k.eventId === c.id), f.audit.find((a) => a.eventId === c.id), f.now);
        return [c.id, { state: v.state, processed: v.processed, category: categoryOf(v, f.now, 3600) }];
      }),
    );
    expect(byFacts).toEqual(expected);

    // 2. The preflight itself (classify.ts on that reading).
    const pf = await createPreflight({ source, replayWindowSeconds: 3600 }, cliPrincipal());
    expect(Object.fromEntries(pf.items.map((i) => [i.eventId, i.category]))).toEqual(
      Object.fromEntries(cases.map((c) => [c.id, c.expected.category])),
    );

    // 3. The worker's lease batch (worker-sql.ts), on a replay of these letters held by this test.
    const [replay] = await sql<{ id: string }>(
      `INSERT INTO replays (source, preflight_id, include, rate_per_second, concurrency, created_by, total, idempotency_key, request_hash,
                            worker, worker_lease_until)
       VALUES ($1, $2, '{}', 10, 1, 'test', $3, $4, 'x', 'verdict-test', now() + interval '1 hour') RETURNING id`,
      [source, pf.preflightId, cases.length, uniq("idem")],
    );
    replays.push(replay.id);
    await sql(
      `INSERT INTO replay_items (replay_id, dead_letter_id, seq, event_id, category)
       SELECT $1, dl, n::int, ev, 'alive' FROM unnest($2::uuid[], $3::text[]) WITH ORDINALITY AS u(dl, ev, n)`,
      [replay.id, letters, cases.map((c) => c.id)],
    );
    const leased = (await sql<LeaseRow>(LEASE_BATCH_SQL, [replay.id, 100, 60, "verdict-test", source])).filter(
      (r): r is Extract<LeaseRow, { event_id: string }> => r.event_id !== null,
    );
    expect(leased).toHaveLength(cases.length);
    const byLease = Object.fromEntries(
      leased.map((r) => {
        const { key, fact } = factsOfRow(r.event_id, r);
        const v = verdictOf(key, fact, r.now);
        return [r.event_id, { state: v.state, processed: v.processed, category: categoryOf(v, r.now, 3600) }];
      }),
    );
    expect(byLease).toEqual(expected);

    // 4. The dead-letter list's key (decideKey in SQL) and its "Keys at risk" count.
    const list = await listDeadLetters({ source, sort: "failedAt", limit: 100 } as Parameters<typeof listDeadLetters>[0]);
    expect(Object.fromEntries(list.items.map((i) => [i.eventId, { state: i.key.state, processed: i.key.processed }]))).toEqual(
      Object.fromEntries(cases.map((c) => [c.id, { state: c.expected.state, processed: c.expected.processed }])),
    );
    expect(list.counts.keyRisk.expired).toBe(unsafe.length);
    // The expiring-within-24-h count: live keys only (alive-expiring; the 7-day keys are far off).
    expect(list.counts.keyRisk.expiringSoon).toBe(1);

    // 5. The metrics' and notifications' count by source.
    expect((await keyRiskBySource()).get(source)).toEqual({ expired: unsafe.length, expiring: 1 });
  }, 90_000); // a dozen claims, a preflight, a lease and a list: seconds, longer on a loaded machine

  it("the preflight's and the worker's statements both read the facts through keyFactsJoin", () => {
    expect(FACTS_SQL).toContain(keyFactsJoin("$1", "e.event_id"));
    expect(LEASE_BATCH_SQL.text).toContain(keyFactsJoin("$5", "l.event_id"));
  });
});
