/**
 * The executor against a small receiver of this test's own (node:http): it verifies the Standard Webhooks
 * signature, claims each event through the claim library, and counts how often it processed each one.
 * One replay delivers everything (audit `replayed` rows, dead letters delivered, zero double processing);
 * retries with a flaky receiver end delivered; an item whose key lapses before its send is skipped; a worker
 * that stops mid-replay leaves nothing lost and a second worker finishes it.
 */
import http from "node:http";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { claimEvent } from "@/lib/claims/claim";
import { cliPrincipal } from "@/lib/auth/principal";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { startReplayWorker, type ReplayWorker } from "@/lib/replay/executor";
import { afterAttempt } from "@/lib/replay/attempts";
import { batchSize } from "@/lib/replay/feed";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { readyForReplay, seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";
import { startReplayRequest } from "@/lib/replay/schema";
import { parseInput } from "@/lib/http/validate";
import type { Json } from "@/test/setup/json";
import { timePasses } from "@/test/setup/time";

/** How long and how often the tests look for a replay's progress (a bound on waiting, not a speed check). */
const POLL = { timeout: 30_000, interval: 100 };

const ACTOR = cliPrincipal();

type Mini = { url: string; processed: Map<string, number>; requests: number; badSignatures: number; close(): Promise<void>; failFirst: Set<string>; onRequest?: (id: string) => Promise<void> };

/** A receiver processing each event at most once by claiming it (a duplicate claim answers 200 without processing). */
async function miniReceiver(source: string, secretRef: { secret?: string }): Promise<Mini> {
  const m: Mini = { url: "", processed: new Map(), requests: 0, badSignatures: 0, failFirst: new Set(), close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      m.requests++;
      const body = Buffer.concat(chunks).toString("utf8");
      const id = String(req.headers["webhook-id"]);
      try {
        new Webhook(secretRef.secret!).verify(body, req.headers as Record<string, string>);
      } catch {
        m.badSignatures++;
        res.writeHead(401).end();
        return;
      }
      await m.onRequest?.(id);
      if (m.failFirst.delete(id)) {
        res.writeHead(503).end("try again");
        return;
      }
      const claim = await claimEvent({ source, eventId: id, eventType: "replayed" });
      if (claim.outcome === "claimed") m.processed.set(id, (m.processed.get(id) ?? 0) + 1);
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  m.url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
  m.close = () => new Promise((r) => (server.closeAllConnections(), server.close(() => r())));
  return m;
}

const cleanup: (() => Promise<void>)[] = [];
const workers: ReplayWorker[] = [];
// Each test's workers stop at its end: a worker left running would take the next test's replays too.
afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop();
});
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** The sources of this file: its workers drive only their replays (other files' workers run beside them). */
const sources: string[] = [];

async function setup(n: number, processedAlready: number) {
  const source = await makeSource(7 * 86400);
  sources.push(source);
  const ref: { secret?: string } = {};
  const rx = await miniReceiver(source, ref);
  cleanup.push(() => rx.close());
  ref.secret = await readyForReplay(source, rx.url);
  const events = Array.from({ length: n }, (_, i) => `evt-${i}-${uniq()}`);
  // The first `processedAlready` were in fact processed (their keys alive): a replay must not process them again.
  for (const e of events.slice(0, processedAlready)) await claimEvent({ source, eventId: e, eventType: "t" });
  await seedDeadLetters(source, events);
  return { source, rx, events };
}

function worker(o: Parameters<typeof startReplayWorker>[0] = {}): ReplayWorker {
  const w = startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: (m) => console.error(`[worker] ${m}`), sources: () => sources, ...o });
  workers.push(w);
  return w;
}

describe("pure parts", () => {
  it("batchSize: about half a second of sends, at least the concurrency, at most 100", () => {
    expect(batchSize(50, 4)).toBe(25);
    expect(batchSize(1, 4)).toBe(4);
    expect(batchSize(500, 4)).toBe(100);
  });
  it("afterAttempt: delivered, retry while retryable and attempts remain, failed otherwise; an abort is no attempt", () => {
    expect(afterAttempt({ ok: true, retryable: false, error: null }, 0)).toEqual({ outcome: "delivered", countsAsAttempt: true });
    expect(afterAttempt({ ok: false, retryable: true, error: "HTTP 503" }, 3)).toEqual({ outcome: "retry", countsAsAttempt: true });
    expect(afterAttempt({ ok: false, retryable: true, error: "HTTP 503" }, 4)).toEqual({ outcome: "failed", countsAsAttempt: true });
    expect(afterAttempt({ ok: false, retryable: false, error: "HTTP 400" }, 0)).toEqual({ outcome: "failed", countsAsAttempt: true });
    expect(afterAttempt({ ok: false, retryable: true, error: "aborted" }, 4)).toEqual({ outcome: "retry", countsAsAttempt: false });
  });
});

describe("the executor", () => {
  it("delivers a replay: every item delivered once, processed items not processed again, audit rows, dead letters settled, completed", async () => {
    const { source, rx, events } = await setup(12, 5);
    const pf = await createPreflight({ source }, ACTOR);
    expect(pf.counts).toMatchObject({ alive: 5, never_processed: 7 });
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["alive", "never_processed"], ratePerSecond: 200 }), uniq("k"), ACTOR);
    worker();
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    const r = await getReplay(replayId);
    expect(r.counts).toMatchObject({ delivered: 12, pending: 0, delivering: 0, failed: 0, skipped_unsafe: 0 });
    expect(r.finishedAt).not.toBeNull();
    expect(rx.badSignatures).toBe(0);
    // The five already processed were rejected by the receiver's claim; the seven others processed once each.
    expect([...rx.processed.values()].every((n) => n === 1)).toBe(true);
    expect([...rx.processed.keys()].sort()).toEqual(events.slice(5).sort());
    const letters = await sql<{ status: string; settled: boolean }>("SELECT status, settled_at IS NOT NULL AS settled FROM dead_letters WHERE source = $1", [source]);
    expect(letters.every((l) => l.status === "delivered" && l.settled)).toBe(true);
    const audit = await sql<{ event_id: string; detail: Json }>("SELECT event_id, detail FROM audit_events WHERE source = $1 AND kind = 'replayed'", [source]);
    expect(audit).toHaveLength(12);
    expect(audit.every((a) => a.detail.outcome === "delivered" && a.detail.replayId === replayId && a.detail.status === 200)).toBe(true);
    const [done] = await sql<{ detail: Json }>(
      "SELECT detail FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'replay.complete' AND detail->'target'->>'id' = $1",
      [replayId],
    );
    expect(done.detail.after).toMatchObject({ total: 12, counts: { delivered: 12 } });
  });

  it("retries a failing delivery with backoff until delivered; an item whose key lapsed before its send is skipped as unsafe", async () => {
    const { source, rx, events } = await setup(4, 1);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["alive", "never_processed"], concurrency: 1 }), uniq("k"), ACTOR);
    // events[0] was processed: its key lapses after the preflight → unsafe at send time.
    await setKeyExpiry(source, events[0], -1);
    rx.failFirst.add(events[1]);
    worker();
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    const r = await getReplay(replayId);
    expect(r.counts).toMatchObject({ delivered: 3, skipped_unsafe: 1 });
    const byEvent = Object.fromEntries(r.items.map((i) => [i.eventId, i]));
    expect(byEvent[events[1]]).toMatchObject({ outcome: "delivered", attempts: 2, lastStatus: 200 });
    expect(byEvent[events[0]]).toMatchObject({ outcome: "skipped_unsafe" });
    expect(byEvent[events[0]].lastError).toMatch(/processed/);
    expect(r.failures.map((f) => f.eventId)).toEqual([events[0]]);
    expect(rx.processed.has(events[0])).toBe(false);
    const [dl] = await sql<{ status: string; last_replay_error: string }>(
      "SELECT status, last_replay_error FROM dead_letters WHERE source = $1 AND event_id = $2",
      [source, events[0]],
    );
    expect(dl.status).toBe("pending");
    expect(dl.last_replay_error).toMatch(/unsafe/);
  });

  it("batched re-check: a key that turns unsafe after its batch was leased, just before its send, is skipped", async () => {
    const { source, rx, events } = await setup(3, 3);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["alive"], ratePerSecond: 200, concurrency: 1 }), uniq("k"), ACTOR);
    // While the first is being delivered (the whole batch is leased by then), the others' keys lapse.
    let first: string | undefined;
    rx.onRequest = async (id) => {
      if (first) return;
      first = id;
      for (const e of events) if (e !== id) await setKeyExpiry(source, e, -1);
    };
    worker({ recheckMaxAgeMs: 0 }); // every send re-reads its facts
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    const byEvent = Object.fromEntries((await getReplay(replayId)).items.map((i) => [i.eventId, i.outcome]));
    expect(byEvent).toEqual(Object.fromEntries(events.map((e) => [e, e === first ? "delivered" : "skipped_unsafe"])));
    expect(rx.requests).toBe(1);
  });

  it("batched re-check: facts older than RECHECK_MAX_AGE_MS (500 ms) at a send are read again (a slow delivery before it)", async () => {
    const { source, rx, events } = await setup(3, 3);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["alive"], ratePerSecond: 200, concurrency: 1 }), uniq("k"), ACTOR);
    let first: string | undefined;
    rx.onRequest = async (id) => {
      if (first) return;
      first = id;
      for (const e of events) if (e !== id) await setKeyExpiry(source, e, -1);
      await timePasses(1500, "the batch's facts grow older than RECHECK_MAX_AGE_MS (500 ms) before the next send");
    };
    worker();
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    const byEvent = Object.fromEntries((await getReplay(replayId)).items.map((i) => [i.eventId, i.outcome]));
    expect(byEvent).toEqual(Object.fromEntries(events.map((e) => [e, e === first ? "delivered" : "skipped_unsafe"])));
    expect(rx.requests).toBe(1);
  });

  it("a worker stopped mid-replay loses nothing: its items go back, another worker finishes, nothing processed twice", async () => {
    const { source, rx, events } = await setup(20, 0);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 5, concurrency: 2 }), uniq("k"), ACTOR);
    const first = worker();
    await expect.poll(async () => (await getReplay(replayId)).counts.delivered, { ...POLL, message: "a few deliveries" }).toBeGreaterThanOrEqual(3);
    await first.stop();
    const mid = await getReplay(replayId);
    expect(mid.status).toBe("running");
    expect(mid.counts.delivering).toBe(0);
    expect(mid.counts.delivered).toBeLessThan(20);
    worker({ workerId: "second" });
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, timeout: 60_000, message: "completion" }).toBe("completed");
    const r = await getReplay(replayId);
    expect(r.counts.delivered).toBe(20);
    expect([...rx.processed.keys()].sort()).toEqual([...events].sort());
    expect([...rx.processed.values()].every((n) => n === 1)).toBe(true);
  });

  it("pause stops a replay within a batch and resume finishes it", async () => {
    const { source } = await setup(10, 0);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 4, concurrency: 1 }), uniq("k"), ACTOR);
    const { changeReplay } = await import("@/lib/replay/replays");
    worker();
    await expect.poll(async () => (await getReplay(replayId)).counts.delivered, { ...POLL, message: "first delivery" }).toBeGreaterThanOrEqual(1);
    await changeReplay(replayId, "pause", ACTOR);
    await expect.poll(async () => (await getReplay(replayId)).counts.delivering, { ...POLL, message: "no delivery in flight" }).toBe(0);
    const paused = await getReplay(replayId);
    await timePasses(700, "at 4 per second, time for about three sends: a worker that ignored the pause would make them");
    // Nothing further is delivered while paused (at most the batch that was already leased).
    expect((await getReplay(replayId)).counts.delivered).toBe(paused.counts.delivered);
    expect(paused.counts.delivered).toBeLessThan(10);
    await changeReplay(replayId, "resume", ACTOR);
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    expect((await getReplay(replayId)).counts.delivered).toBe(10);
  });

  it("a dead worker's leases lapse and another worker takes its items over (crash recovery)", async () => {
    const { source, rx, events } = await setup(6, 0);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 100 }), uniq("k"), ACTOR);
    // As a killed server leaves it: the replay and three items held by a worker that will never come back.
    await sql("UPDATE replays SET worker = 'dead', worker_lease_until = now() + interval '1 second' WHERE id = $1", [replayId]);
    await sql(
      `UPDATE replay_items SET outcome = 'delivering', leased_by = 'dead', lease_until = now() + interval '1 second'
       WHERE replay_id = $1 AND seq < 3`,
      [replayId],
    );
    worker();
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    const r = await getReplay(replayId);
    expect(r.counts.delivered).toBe(6);
    expect([...rx.processed.keys()].sort()).toEqual([...events].sort());
  });

  it("two workers on one replay: one drives it, every item is delivered and audited exactly once", async () => {
    const { source, rx } = await setup(30, 0);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 100, concurrency: 8 }), uniq("k"), ACTOR);
    worker({ workerId: "w1" });
    worker({ workerId: "w2" });
    await expect.poll(async () => (await getReplay(replayId)).status, { ...POLL, message: "completion" }).toBe("completed");
    expect(rx.requests).toBe(30);
    const audit = await sql<{ event_id: string; n: number }>(
      "SELECT event_id, count(*)::int AS n FROM audit_events WHERE source = $1 AND kind = 'replayed' GROUP BY event_id",
      [source],
    );
    expect(audit).toHaveLength(30);
    expect(audit.every((a) => a.n === 1)).toBe(true);
  });

  it("cancel stops a running replay within a batch: every item ends delivered or cancelled, none lost", async () => {
    const { source, rx } = await setup(12, 0);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 4, concurrency: 1 }), uniq("k"), ACTOR);
    const { changeReplay } = await import("@/lib/replay/replays");
    worker();
    await expect.poll(async () => (await getReplay(replayId)).counts.delivered, { ...POLL, message: "first delivery" }).toBeGreaterThanOrEqual(1);
    await changeReplay(replayId, "cancel", ACTOR);
    const unsettled = async () => {
      const c = (await getReplay(replayId)).counts;
      return c.delivering + c.pending;
    };
    await expect.poll(unsettled, { ...POLL, message: "settled" }).toBe(0);
    const r = await getReplay(replayId);
    expect(r.status).toBe("cancelled");
    expect(r.counts.delivered + r.counts.cancelled).toBe(12);
    expect(r.counts.cancelled).toBeGreaterThan(0);
    const sent = rx.requests;
    await timePasses(600, "at 4 per second, time for about two sends: a worker that ignored the cancel would make them");
    expect(rx.requests).toBe(sent);
    const letters = await sql<{ status: string; n: number }>(
      "SELECT status, count(*)::int AS n FROM dead_letters WHERE source = $1 GROUP BY status ORDER BY status",
      [source],
    );
    expect(Object.fromEntries(letters.map((l) => [l.status, l.n]))).toEqual({ delivered: r.counts.delivered, pending: r.counts.cancelled });
  });
});
