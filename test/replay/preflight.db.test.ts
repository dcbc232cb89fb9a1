/**
 * Preflight against the real database: each category from real claims, settles and expiries; the stored
 * snapshot; extend (only that preflight's alive and expiring keys, never an expired one, logged with
 * counts, re-classified); staleness.
 */
import { describe, expect, it } from "vitest";
import { claimEvent } from "@/lib/claims/claim";
import { completeClaim, releaseClaim } from "@/lib/claims/settle";
import { cliPrincipal } from "@/lib/auth/principal";
import { createPreflight, extendPreflight, getPreflight } from "@/lib/replay/preflight";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";
import { parseInput } from "@/lib/http/validate";
import { preflightParams, preflightRequest } from "@/lib/replay/schema";
import type { Json } from "@/test/setup/json";

const ACTOR = cliPrincipal();
const HOUR = 3600;

/** One event per category (and two variants), with the source's window = 1 hour. */
async function scenario() {
  const source = await makeSource(7 * 86400);
  const e = (n: string) => `${n}-${uniq("e")}`;
  const ids = {
    alive: e("alive"),
    expiring: e("expiring"),
    expiredCompleted: e("expired-completed"),
    prunedClaimed: e("pruned-claimed"),
    released: e("released"),
    never: e("never"),
    inFlight: e("in-flight"),
    lapsed: e("lapsed"),
  };
  await claimEvent({ source, eventId: ids.alive, eventType: "t" });
  await claimEvent({ source, eventId: ids.expiring, eventType: "t" });
  await setKeyExpiry(source, ids.expiring, 60);
  const c = await claimEvent({ source, eventId: ids.expiredCompleted, eventType: "t", leaseSeconds: 60 });
  await completeClaim({ source, eventId: ids.expiredCompleted, claimToken: c.claimToken! });
  await setKeyExpiry(source, ids.expiredCompleted, -10);
  await claimEvent({ source, eventId: ids.prunedClaimed, eventType: "t" });
  await sql("DELETE FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, ids.prunedClaimed]);
  const r = await claimEvent({ source, eventId: ids.released, eventType: "t", leaseSeconds: 60 });
  await releaseClaim({ source, eventId: ids.released, claimToken: r.claimToken! });
  await claimEvent({ source, eventId: ids.inFlight, eventType: "t", leaseSeconds: 600 });
  await claimEvent({ source, eventId: ids.lapsed, eventType: "t", leaseSeconds: 600 });
  await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = $2", [source, ids.lapsed]);
  const order = Object.values(ids);
  const dl = await seedDeadLetters(source, order);
  return { source, ids, dl, order };
}

describe("createPreflight", () => {
  it("classifies each pending dead letter from real keys and audit history, and stores the snapshot", async () => {
    const { source, ids, dl } = await scenario();
    const pf = await createPreflight({ source, replayWindowSeconds: HOUR }, ACTOR);
    const byEvent = Object.fromEntries(pf.items.map((i) => [i.eventId, i.category]));
    expect(byEvent).toEqual({
      [ids.alive]: "alive",
      [ids.expiring]: "expiring",
      [ids.expiredCompleted]: "expired_processed",
      [ids.prunedClaimed]: "expired_processed",
      [ids.released]: "never_processed",
      [ids.never]: "never_processed",
      [ids.inFlight]: "in_flight",
      [ids.lapsed]: "alive",
    });
    expect(pf.counts).toEqual({ alive: 2, expiring: 1, expired_processed: 2, never_processed: 2, in_flight: 1, total: 8 });
    expect(pf.items.map((i) => i.deadLetterId).sort()).toEqual([...dl].sort());
    expect(Date.parse(pf.validUntil) - Date.parse(pf.createdAt)).toBe(15 * 60 * 1000);
    expect(pf).toMatchObject({ source, windowSeconds: HOUR, extendedAt: null, truncated: false });
    expect(pf.items.find((i) => i.eventId === ids.expiredCompleted)!.processedAt).not.toBeNull();
    expect(pf.items.every((i) => i.reason.length > 10)).toBe(true);
    expect(await getPreflight(pf.preflightId, cliPrincipal())).toEqual(pf);
  });

  it("the window defaults to the source's replay margin; ids and filters select; only pending letters", async () => {
    const source = await makeSource(7 * 86400);
    await sql("UPDATE sources SET replay_seconds = 7200, retry_window_seconds = retry_window_seconds - 7200 WHERE name = $1", [source]);
    const [a, b, c] = await seedDeadLetters(source, ["a", "b", "c"].map((x) => `${x}-${uniq()}`), { failedAt: "2026-11-01T00:00:00Z" });
    const [d] = await seedDeadLetters(source, [`d-${uniq()}`], { error: "schema mismatch in field x_y", failedAt: "2026-11-05T00:00:00Z" });
    await sql("UPDATE dead_letters SET status = 'delivered', settled_at = now() WHERE id = $1", [c]);

    const all = await createPreflight({ source }, ACTOR);
    expect(all.windowSeconds).toBe(7200);
    expect(all.items.map((i) => i.deadLetterId).sort()).toEqual([a, b, d].sort());
    expect(all.items[2].deadLetterId).toBe(d); // oldest failure first
    expect((await createPreflight({ source, deadLetterIds: [b, c] }, ACTOR)).items.map((i) => i.deadLetterId)).toEqual([b]);
    expect((await createPreflight({ source, filter: { errorContains: "X_Y" } }, ACTOR)).items.map((i) => i.deadLetterId)).toEqual([d]);
    // "%" and "_" are literal in errorContains
    expect((await createPreflight({ source, filter: { errorContains: "x%y" } }, ACTOR)).items).toEqual([]);
    expect(
      (await createPreflight({ source, filter: { from: "2026-11-02T00:00:00Z", to: "2026-12-01T00:00:00Z" } }, ACTOR)).items.map((i) => i.deadLetterId),
    ).toEqual([d]);
    // letters of another source are never selected
    const other = await makeSource();
    expect((await createPreflight({ source: other, deadLetterIds: [a] }, ACTOR)).counts.total).toBe(0);
  });

  it("bad input: 422 naming the field; unknown source 404", async () => {
    const source = await makeSource();
    const bad: [unknown, RegExp][] = [
      [{}, /source/],
      [{ source, deadLetterIds: ["nope"] }, /deadLetterIds\.0/],
      [{ source, deadLetterIds: [] }, /deadLetterIds/],
      [{ source, replayWindowSeconds: -1 }, /replayWindowSeconds/],
      [{ source, replayWindowSeconds: 1.5 }, /replayWindowSeconds/],
      [{ source, filter: { from: "soon" } }, /filter\.from/],
      [{ source, deadLetterIds: ["00000000-0000-4000-8000-000000000000"], filter: {} }, /either deadLetterIds or filter/],
      [{ source, extra: true }, /extra/],
    ];
    for (const [input, msg] of bad) {
      // Refused by the schema POST /api/v1/replays/preflight parses with, before createPreflight.
      expect(() => parseInput(preflightRequest, input), JSON.stringify(input)).toThrow(expect.objectContaining({ status: 422, message: expect.stringMatching(msg) }));
    }
    await expect(createPreflight({ source: "no-such-source-pf" }, ACTOR)).rejects.toMatchObject({ status: 404 });
    // A malformed id is refused at the edge (the route's params, the CLI) with the same 404 as an unknown one.
    expect(() => parseInput(preflightParams, { id: "not-a-uuid" })).toThrow(expect.objectContaining({ status: 404, code: "preflight_not_found" }));
    await expect(getPreflight("00000000-0000-4000-8000-000000000000", cliPrincipal())).rejects.toMatchObject({ status: 404 });
  });
});

describe("extendPreflight", () => {
  it("extends only the preflight's alive and expiring keys, never an expired one; logs counts; re-classifies", async () => {
    const { source, ids } = await scenario();
    // A key of the same source outside the preflight, expiring soon: untouched.
    const outsider = `outsider-${uniq()}`;
    await claimEvent({ source, eventId: outsider, eventType: "t" });
    await setKeyExpiry(source, outsider, 60);
    // An alive key already beyond now + window keeps its (longer) expiry.
    const [{ before }] = await sql<{ before: Date }>("SELECT expires_at AS before FROM dedup_keys WHERE source = $1 AND event_id = $2", [
      source,
      ids.alive,
    ]);

    const pf = await createPreflight({ source, replayWindowSeconds: HOUR }, ACTOR);
    const { extended, preflight } = await extendPreflight(pf.preflightId, ACTOR);
    expect(extended).toBe(1); // the expiring key; the alive ones already outlive the window (+ the send margin)
    expect(preflight.extendedAt).not.toBeNull();
    const cat = Object.fromEntries(preflight.items.map((i) => [i.eventId, i.category]));
    expect(cat[ids.expiring]).toBe("alive");
    expect(cat[ids.expiredCompleted]).toBe("expired_processed");
    expect(preflight.counts.expiring).toBe(0);

    const keys = await sql<{ event_id: string; left: number; expires_at: Date }>(
      "SELECT event_id, extract(epoch FROM expires_at - now())::float8 AS left, expires_at FROM dedup_keys WHERE source = $1",
      [source],
    );
    const left = Object.fromEntries(keys.map((k) => [k.event_id, k.left]));
    expect(left[ids.expiring]).toBeGreaterThan(HOUR - 30);
    expect(left[outsider]).toBeLessThan(61);
    expect(left[ids.expiredCompleted]).toBeLessThan(0); // never resurrected
    expect(keys.find((k) => k.event_id === ids.alive)!.expires_at).toEqual(before);

    const [action] = await sql<{ detail: Json; actor: string }>(
      "SELECT detail, actor FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'replay.preflight.extend' AND detail->'target'->>'id' = $1",
      [pf.preflightId],
    );
    expect(action.detail.after).toMatchObject({ extended: 1, alive: 2, expiring: 1, windowSeconds: HOUR });
    expect(await getPreflight(pf.preflightId, cliPrincipal())).toEqual(preflight);
  });

  it("a stale preflight is refused with 409, and an unknown one is a 404", async () => {
    const { source } = await scenario();
    const pf = await createPreflight({ source, replayWindowSeconds: HOUR }, ACTOR);
    await sql("UPDATE replay_preflights SET valid_until = now() - interval '1 second' WHERE id = $1", [pf.preflightId]);
    await expect(extendPreflight(pf.preflightId, ACTOR)).rejects.toMatchObject({ status: 409, code: "preflight_stale" });
    await expect(extendPreflight("00000000-0000-4000-8000-000000000000", ACTOR)).rejects.toMatchObject({ status: 404 });
  });
});
