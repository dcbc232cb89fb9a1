/**
 * Clean-up and bulk (issue 13 §12), through the route handlers with an operator's key: discard (reason
 * required) and resolve, by ids or by a filter over one source, bounded by a typed count, recorded in the
 * action log. Discarded and resolved letters leave replay selection and keys at risk, and retention prunes
 * them. And the replay selection "everything that failed since T for source S" in one step.
 */
import { describe, expect, it } from "vitest";
import { parseInput } from "@/lib/http/validate";
import { startReplayRequest } from "@/lib/replay/schema";
import { POST as discardRoute } from "@/app/api/v1/dead-letters/discard/route";
import { POST as resolveRoute } from "@/app/api/v1/dead-letters/resolve/route";
import { GET as listRoute } from "@/app/api/v1/dead-letters/route";
import { GET as letterRoute } from "@/app/api/v1/dead-letters/[id]/route";
import { POST as preflightRoute } from "@/app/api/v1/replays/preflight/route";
import { cliPrincipal } from "@/lib/auth/principal";
import { pruneSettledDeadLetters } from "@/lib/deadletters/prune";
import { BULK_CONFIRM_ABOVE, MIN_DISCARD_REASON } from "@/lib/deadletters/schema";
import { createPreflight } from "@/lib/replay/preflight";
import { startReplay } from "@/lib/replay/replays";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { readyForReplay, seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";
import { claimEvent } from "@/lib/claims/claim";
import type { Json } from "@/test/setup/json";

type Handler = (req: Request, ctx?: { params: Promise<Record<string, string>> }) => Promise<Response>;
async function call(handler: Handler, key: string, path: string, body?: unknown, params: Record<string, string> = {}) {
  const res = await handler(
    new Request(`http://localhost${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
    { params: Promise.resolve(params) },
  );
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const REASON = "duplicate of a manual refund, nothing to do";
const day = (d: number) => new Date(Date.UTC(2026, 10, d, 12)).toISOString();

async function actionsOf(source: string, action: string) {
  return sql<{ actor: string; detail: Json }>(
    "SELECT actor, detail FROM audit_events WHERE kind = 'operator' AND source = $1 AND detail->>'action' = $2 ORDER BY at",
    [source, action],
  );
}

describe("discard and resolve", () => {
  it("by ids: only pending letters change, the others are reported; audited; the reason is required for discard", async () => {
    const operator = await makeApiKey(["operator"]);
    const source = await makeSource();
    await readyForReplay(source, "http://127.0.0.1:9/never");
    const [a, b, c, held] = await seedDeadLetters(source, [`a-${uniq()}`, `b-${uniq()}`, `c-${uniq()}`, `held-${uniq()}`]);
    // `held` is taken by a running replay.
    const pf = await createPreflight({ source, deadLetterIds: [held] }, cliPrincipal());
    await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"] }), uniq("k"), cliPrincipal());
    const unknown = "00000000-0000-4000-8000-000000000000";

    for (const bad of [{ ids: [a] }, { ids: [a], reason: "too short" }, { ids: [a], reason: " ".repeat(20) }]) {
      const r = await call(discardRoute, operator.key, "/api/v1/dead-letters/discard", bad);
      expect(r.status, JSON.stringify(bad)).toBe(422);
      expect(r.body.error.message).toMatch(/reason/);
    }
    expect(MIN_DISCARD_REASON).toBe(10);
    const neither = await call(discardRoute, operator.key, "/api/v1/dead-letters/discard", { reason: REASON });
    expect(neither.status).toBe(422);
    expect(neither.body.error.message).toMatch(/either ids or filter/);
    const both = await call(discardRoute, operator.key, "/api/v1/dead-letters/discard", { reason: REASON, ids: [a], filter: { source } });
    expect(both.status).toBe(422);

    const discarded = await call(discardRoute, operator.key, "/api/v1/dead-letters/discard", { ids: [a, b, held, unknown, a], reason: REASON });
    expect(discarded.status).toBe(200);
    expect(discarded.body.discarded).toBe(2);
    expect([...discarded.body.ids].sort()).toEqual([a, b].sort());
    expect(discarded.body.skipped).toEqual([
      { id: held, status: "replaying" },
      { id: unknown, status: null },
    ]);
    const letter = await call(letterRoute, operator.key, `/api/v1/dead-letters/${a}`, undefined, { id: a });
    expect(letter.body).toMatchObject({ status: "discarded", settledBy: `apikey:${operator.name}`, settleReason: REASON });
    expect(letter.body.settledAt).not.toBeNull();
    // Discarding again changes nothing.
    const again = await call(discardRoute, operator.key, "/api/v1/dead-letters/discard", { ids: [a], reason: REASON });
    expect(again.body).toEqual({ discarded: 0, ids: [], skipped: [{ id: a, status: "discarded" }] });

    const resolved = await call(resolveRoute, operator.key, "/api/v1/dead-letters/resolve", { ids: [c] });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toEqual({ resolved: 1, ids: [c], skipped: [] });
    expect((await call(letterRoute, operator.key, `/api/v1/dead-letters/${c}`, undefined, { id: c })).body).toMatchObject({
      status: "resolved",
      settleReason: null,
    });

    const [logged] = await actionsOf(source, "dead_letter.discard");
    expect(logged.actor).toBe(`apikey:${operator.name}`);
    expect(logged.detail).toMatchObject({ reason: REASON, target: { type: "dead_letter", id: "bulk" }, after: { count: 2, skipped: 2 } });
    expect([...logged.detail.after.ids].sort()).toEqual([a, b].sort());
    const [res] = await actionsOf(source, "dead_letter.resolve");
    expect(res.detail).toMatchObject({ target: { type: "dead_letter", id: c }, after: { count: 1, ids: [c] } });

    // A read-only key may not.
    const reader = await makeApiKey(["read"]);
    expect((await call(resolveRoute, reader.key, "/api/v1/dead-letters/resolve", { ids: [b] })).status).toBe(403);
  });

  it("by filter: source, failedSince/failedUntil, error text; more than the bound needs the typed count", async () => {
    const operator = (await makeApiKey(["operator"])).key;
    const source = await makeSource();
    const other = await makeSource();
    const old = await seedDeadLetters(source, [`old-${uniq()}`], { failedAt: day(1), error: "HTTP 500 from billing" });
    const recent = await seedDeadLetters(source, Array.from({ length: BULK_CONFIRM_ABOVE + 5 }, (_, i) => `r${i}-${uniq()}`), {
      failedAt: day(10),
      error: "HTTP 500 from billing",
    });
    const timeouts = await seedDeadLetters(source, [`t-${uniq()}`, `t-${uniq()}`], { failedAt: day(10), error: "timeout after 30s" });
    await seedDeadLetters(other, [`o-${uniq()}`], { failedAt: day(10), error: "HTTP 500 from billing" });

    const f = { source, failedSince: day(5), error: "http 500" };
    const unconfirmed = await call(resolveRoute, operator, "/api/v1/dead-letters/resolve", { filter: f });
    expect(unconfirmed.status).toBe(409);
    expect(unconfirmed.body.error.code).toBe("count_confirmation_required");
    expect(unconfirmed.body.error.details).toEqual({ matched: recent.length, expectedCount: null });
    const wrong = await call(resolveRoute, operator, "/api/v1/dead-letters/resolve", { filter: f, expectedCount: recent.length - 1 });
    expect(wrong.status).toBe(409);
    expect(wrong.body.error.message).toContain(`not the ${recent.length - 1} expected`);
    // Nothing changed by the refusals.
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dead_letters WHERE source = $1 AND status = 'pending'", [source]);
    expect(n).toBe(1 + recent.length + 2);

    const confirmed = await call(resolveRoute, operator, "/api/v1/dead-letters/resolve", { filter: f, expectedCount: recent.length, reason: "fixed by hand" });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.resolved).toBe(recent.length);
    expect([...confirmed.body.ids].sort()).toEqual([...recent].sort());
    const [logged] = await actionsOf(source, "dead_letter.resolve");
    expect(logged.detail).toMatchObject({ reason: "fixed by hand", after: { count: recent.length, filter: f } });

    // A small filter needs no count; failedUntil bounds it; only pending letters are meant.
    const small = await call(discardRoute, operator, "/api/v1/dead-letters/discard", {
      filter: { source, status: "pending", failedUntil: day(5) },
      reason: REASON,
    });
    expect(small.body).toEqual({ discarded: 1, ids: old, skipped: [] });
    const notPending = await call(discardRoute, operator, "/api/v1/dead-letters/discard", { filter: { source, status: "delivered" }, reason: REASON });
    expect(notPending.status).toBe(422);
    const noSource = await call(discardRoute, operator, "/api/v1/dead-letters/discard", { filter: { error: "x" }, reason: REASON });
    expect(noSource.status).toBe(422);
    // Only the timeouts are left pending, and the other source was never touched.
    const pending = await sql<{ id: string }>("SELECT id FROM dead_letters WHERE source = $1 AND status = 'pending'", [source]);
    expect(pending.map((p) => p.id).sort()).toEqual([...timeouts].sort());
    const [o] = await sql<{ status: string }>("SELECT status FROM dead_letters WHERE source = $1", [other]);
    expect(o.status).toBe("pending");
  });

  it("discarded and resolved letters leave replay selection and keys at risk; retention prunes them", async () => {
    const operator = (await makeApiKey(["operator"])).key;
    const source = await makeSource();
    const events = [`keep-${uniq()}`, `gone-${uniq()}`, `done-${uniq()}`];
    // Processed once, their keys expired since: each is at risk (a replay would process it again).
    for (const e of events) {
      await claimEvent({ source, eventId: e, eventType: "t" });
      await setKeyExpiry(source, e, -30);
    }
    const [keep, gone, done] = await seedDeadLetters(source, events);
    const risk = async () => (await call(listRoute, operator, `/api/v1/dead-letters?source=${source}`)).body.counts.keyRisk.expired;
    expect(await risk()).toBe(3);
    await call(discardRoute, operator, "/api/v1/dead-letters/discard", { ids: [gone], reason: REASON });
    await call(resolveRoute, operator, "/api/v1/dead-letters/resolve", { ids: [done] });
    expect(await risk()).toBe(1);
    const pf = await call(preflightRoute, operator, "/api/v1/replays/preflight", { source });
    expect(pf.status).toBe(201);
    expect(pf.body.items.map((i: { deadLetterId: string }) => i.deadLetterId)).toEqual([keep]);
    const byId = await call(preflightRoute, operator, "/api/v1/replays/preflight", { source, deadLetterIds: [gone, done] });
    expect(byId.body.counts.total).toBe(0);
    // Listed under their status.
    const listed = await call(listRoute, operator, `/api/v1/dead-letters?source=${source}&status=discarded`);
    expect(listed.body.items.map((i: { id: string }) => i.id)).toEqual([gone]);

    // Retention: settled longer ago than the retention → pruned (with their attempts); the pending one stays.
    await sql("UPDATE dead_letters SET settled_at = now() - interval '400 days' WHERE id = ANY($1::uuid[])", [[gone, done]]);
    await pruneSettledDeadLetters();
    const left = await sql<{ id: string }>("SELECT id FROM dead_letters WHERE source = $1", [source]);
    expect(left.map((l) => l.id)).toEqual([keep]);
  });

  it("replay selection: everything that failed since T for source S, in one step", async () => {
    const operator = (await makeApiKey(["operator"])).key;
    const source = await makeSource();
    await seedDeadLetters(source, [`before-${uniq()}`], { failedAt: day(1) });
    const since = await seedDeadLetters(source, [`s1-${uniq()}`, `s2-${uniq()}`], { failedAt: day(12) });
    const pf = await call(preflightRoute, operator, "/api/v1/replays/preflight", { source, filter: { from: day(10) } });
    expect(pf.status).toBe(201);
    expect(pf.body.items.map((i: { deadLetterId: string }) => i.deadLetterId).sort()).toEqual([...since].sort());
  });
});
