/**
 * Late duplicates (issue 14 §2) on the real PostgreSQL: a first claim whose key had an earlier claim in
 * the audit history, found by the bounded job — with the expired key still stored (unpruned: claim kind
 * reclaimed_after_expiry) and with it pruned (a plain `claimed`); a released key claimed again is not
 * one; a replay-driven one is marked; the gap runs from the key's first claim (a lease takeover is not
 * a new claim). Each test reads from its own position (cursor name) starting when the file started, and
 * asserts only about its own sources.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { GET as lateRoute } from "@/app/api/v1/sources/[name]/late-duplicates/route";
import { claimEvent } from "@/lib/claims/claim";
import { releaseClaim } from "@/lib/claims/settle";
import { parseInput } from "@/lib/http/validate";
import { listLateDuplicates } from "@/lib/retention/advice";
import { lateDuplicatesQuery } from "@/lib/retention/advice-schema";
import { detectLateDuplicates } from "@/lib/retention/late-duplicates";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";

const D = 86400;
let start: Date;

beforeAll(async () => {
  const [{ now }] = await sql<{ now: Date }>("SELECT now() - interval '1 minute' AS now");
  start = now;
});

/** An audit row of the key, `secondsAgo` back (as the claim statement writes them). */
async function audit(source: string, eventId: string, kind: string, secondsAgo: number, actor = "apikey:test") {
  await sql(
    `INSERT INTO audit_events (at, source, event_id, event_type, kind, actor)
     VALUES (now() - make_interval(secs => $4), $1, $2, 'invoice.paid', $3, $5)`,
    [source, eventId, kind, secondsAgo, actor],
  );
}

/** Runs the job from this file's start on its own position until it has read everything settled. */
async function detect(cursorKey: string) {
  return detectLateDuplicates({ cursorKey, start, settleSeconds: 0 });
}

async function lateOf(source: string) {
  return sql<{ event_id: string; gap_seconds: number; key_state: string; via_replay: boolean; late_actor: string }>(
    "SELECT event_id, gap_seconds, key_state, via_replay, late_actor FROM late_duplicates WHERE source = $1 ORDER BY event_id",
    [source],
  );
}

describe("the late-duplicate job", () => {
  it("finds a reclaim of an expired key that was still stored (unpruned), with the gap since the first claim", async () => {
    const source = await makeSource(2 * D);
    const e = uniq("evt");
    await audit(source, e, "claimed", 3 * D);
    // The expired key, still stored (not pruned yet), claimed 3 days ago.
    await sql(
      `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, received_at, expires_at)
       VALUES ($1, $2, 'invoice.paid', 'done', gen_random_uuid(), 'claimed', now() - interval '3 days', now() - interval '1 day')`,
      [source, e],
    );
    const late = await claimEvent({ source, eventId: e, eventType: "invoice.paid" }, { actor: "apikey:billing" });
    expect(late.claimKind).toBe("reclaimed_after_expiry");

    const cursor = uniq("cur");
    const r = await detect(cursor);
    expect(r.found).toBeGreaterThanOrEqual(1);
    const rows = await lateOf(source);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ event_id: e, key_state: "unpruned", via_replay: false, late_actor: "apikey:billing" });
    expect(rows[0].gap_seconds).toBeGreaterThanOrEqual(3 * D);
    expect(rows[0].gap_seconds).toBeLessThan(3 * D + 600);

    // Run again: nothing new, nothing twice.
    await detect(cursor);
    expect(await lateOf(source)).toHaveLength(1);
  });

  it("finds a plain first claim whose key was pruned long ago (only the audit history remembers it)", async () => {
    const source = await makeSource(D);
    const e = uniq("evt");
    await audit(source, e, "claimed", 2 * D + 3600);
    const late = await claimEvent({ source, eventId: e, eventType: "invoice.paid" });
    expect(late.claimKind).toBe("claimed");
    await detect(uniq("cur"));
    const rows = await lateOf(source);
    expect(rows).toHaveLength(1);
    expect(rows[0].key_state).toBe("pruned");
    expect(rows[0].gap_seconds).toBeGreaterThan(2 * D + 3600 - 5);
  });

  it("leaves out a released key claimed again: it was freed on purpose", async () => {
    const source = await makeSource(D);
    const released = uniq("rel");
    await audit(source, released, "claimed", 2 * D);
    await audit(source, released, "released", 2 * D - 60);
    await claimEvent({ source, eventId: released, eventType: "invoice.paid" });
    // And the same through the API of today: claim, release, claim again.
    const now = uniq("rel-now");
    const c = await claimEvent({ source, eventId: now, eventType: "t", leaseSeconds: 60 });
    await releaseClaim({ source, eventId: now, claimToken: c.claimToken });
    expect((await claimEvent({ source, eventId: now, eventType: "t" })).outcome).toBe("claimed");
    // A control in the same source that is late, so an empty answer cannot come from reading nothing.
    const control = uniq("ctl");
    await audit(source, control, "claimed", 2 * D);
    await claimEvent({ source, eventId: control, eventType: "t" });

    await detect(uniq("cur"));
    expect((await lateOf(source)).map((r) => r.event_id)).toEqual([control]);
  });

  it("measures the gap from the key's first claim: a lease takeover is the same key", async () => {
    const source = await makeSource(D);
    const e = uniq("evt");
    await audit(source, e, "claimed", 3 * D);
    await audit(source, e, "lease_takeover", 2 * D);
    await claimEvent({ source, eventId: e, eventType: "t" });
    await detect(uniq("cur"));
    const [row] = await lateOf(source);
    expect(row.gap_seconds).toBeGreaterThanOrEqual(3 * D);
  });

  it("marks a replay-driven reclaim as such, also when the replay's record lands after the job saw the claim", async () => {
    const source = await makeSource(D);
    const replayed = uniq("rp");
    const later = uniq("rp-later");
    await audit(source, replayed, "claimed", 5 * D);
    await audit(source, later, "claimed", 5 * D);
    await claimEvent({ source, eventId: replayed, eventType: "t" }, { actor: "apikey:receiver" });
    await claimEvent({ source, eventId: later, eventType: "t" }, { actor: "apikey:receiver" });
    // The executor writes `replayed` once the destination answered, after the receiver's claim.
    await audit(source, replayed, "replayed", 0, "replay:worker");
    const cursor = uniq("cur");
    await detect(cursor);
    let rows = await lateOf(source);
    expect(rows.find((r) => r.event_id === replayed)?.via_replay).toBe(true);
    expect(rows.find((r) => r.event_id === later)?.via_replay).toBe(false);

    await audit(source, later, "replayed", 0, "replay:worker");
    const again = await detect(cursor);
    expect(again.markedReplay).toBeGreaterThanOrEqual(1);
    rows = await lateOf(source);
    expect(rows.every((r) => r.via_replay)).toBe(true);
  });

  it("bounds its work: one batch per run when the budget is spent, and the next run carries on from there", async () => {
    const source = await makeSource(D);
    const ids = [uniq("b1"), uniq("b2"), uniq("b3")];
    for (const e of ids) await audit(source, e, "claimed", 2 * D);
    for (const e of ids) await claimEvent({ source, eventId: e, eventType: "t" });
    // Start at the first late claim, so this position only reads this test's claims (and others' after them).
    const [{ at }] = await sql<{ at: Date }>(
      "SELECT min(at) - interval '1 millisecond' AS at FROM audit_events WHERE source = $1 AND at > now() - interval '1 hour'",
      [source],
    );
    const cursor = uniq("cur");
    const first = await detectLateDuplicates({ cursorKey: cursor, start: at, settleSeconds: 0, batchSize: 2, budgetMs: 0 });
    expect(first.batches).toBe(1);
    expect(first.scanned).toBe(2);
    let found = (await lateOf(source)).length;
    expect(found).toBeLessThanOrEqual(2);
    for (let i = 0; i < 200 && found < 3; i++) {
      await detectLateDuplicates({ cursorKey: cursor, start: at, settleSeconds: 0, batchSize: 2, budgetMs: 0 });
      found = (await lateOf(source)).length;
    }
    expect(found).toBe(3);
  });

  it("walks a position far behind through empty hours to now in one run, one hour's window per statement", async () => {
    const source = await makeSource(D);
    const e = uniq("far");
    await audit(source, e, "claimed", 2 * D);
    await claimEvent({ source, eventId: e, eventType: "t" });
    const [{ at }] = await sql<{ at: Date }>("SELECT now() - interval '3 days' AS at");
    const cursor = uniq("cur");
    const r = await detectLateDuplicates({ cursorKey: cursor, start: at, settleSeconds: 0 });
    expect(r.batches).toBeGreaterThanOrEqual(72); // at least one statement per hour of the 3 days
    expect((await lateOf(source)).map((x) => x.event_id)).toEqual([e]);
    const [pos] = await sql<{ behind: number }>("SELECT extract(epoch FROM now() - at)::float8 AS behind FROM late_duplicate_cursors WHERE name = $1", [cursor]);
    expect(pos.behind).toBeLessThan(3600);
  });

  it("lists them newest first a page at a time over the API, with a count per day; 404 unknown source, 400 bad window, 422 bad cursor", async () => {
    const { key } = await makeApiKey(["read"]);
    const source = await makeSource(D);
    const ids = [uniq("l1"), uniq("l2"), uniq("l3")];
    for (const e of ids) await audit(source, e, "claimed", 2 * D);
    for (const e of ids) await claimEvent({ source, eventId: e, eventType: "t" });
    await detect(uniq("cur"));

    const get = async (name: string, qs: string) => {
      const res = await lateRoute(new Request(`http://localhost/api/v1/sources/${name}/late-duplicates?${qs}`, { headers: { authorization: `Bearer ${key}` } }), {
        params: Promise.resolve({ name }),
      });
      return { status: res.status, body: await res.json() };
    };
    const p1 = await get(source, "limit=2");
    expect(p1.status).toBe(200);
    expect(p1.body.items).toHaveLength(2);
    expect(p1.body.next).toEqual(expect.any(String));
    const p2 = await get(source, `limit=2&cursor=${p1.body.next}`);
    expect(p2.body.items).toHaveLength(1);
    expect(p2.body.next).toBeNull();
    const seen = [...p1.body.items, ...p2.body.items].map((i: { eventId: string }) => i.eventId);
    expect(seen.sort()).toEqual([...ids].sort());
    const lateTimes = [...p1.body.items, ...p2.body.items].map((i: { lateClaimAt: string }) => Date.parse(i.lateClaimAt));
    expect(lateTimes).toEqual([...lateTimes].sort((a, b) => b - a));
    expect(p1.body.perDay.reduce((n: number, d: { count: number }) => n + d.count, 0)).toBe(3);
    expect(p1.body.perDay).toHaveLength(31); // 30 days back from now, both ends' days included

    expect((await get("no-such-source-x", "")).status).toBe(404);
    const bad = await get(source, "window=30x");
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe("invalid_request");
    expect(bad.body.error.details.fields).toEqual([expect.objectContaining({ field: "window" })]);
    expect((await get(source, "window=365d")).status).toBe(422);
    const forged = await get(source, `cursor=${Buffer.from('["2026-02-30T00:00:00.000000Z","x"]').toString("base64url")}`);
    expect(forged.status).toBe(422);
    expect(forged.body.error.message).toContain("cursor");

    const lib = await listLateDuplicates(source, parseInput(lateDuplicatesQuery, { limit: 10 }));
    expect(lib.items.map((i) => i.keyState)).toEqual(["pruned", "pruned", "pruned"]);
  });
});
