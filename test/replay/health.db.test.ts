/**
 * Replay health (issue 13 §8): ok, stalled, failing, with the latest error and its time, on the replay
 * (GET /api/v1/replays and /replays/{id}, through the route handlers), in the Overview's count of unhealthy
 * running replays. Failing: a receiver answering 500 (test/setup/receiver.ts) to the real executor.
 * Stalled: a receiver that hangs, and a replay whose lease a dead worker holds; "no result for so long" is
 * set with SQL (the replay's clocks moved back), not waited for.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { GET as listRoute } from "@/app/api/v1/replays/route";
import { GET as getRoute } from "@/app/api/v1/replays/[id]/route";
import { GET as overviewRoute } from "@/app/api/v1/overview/route";
import { cliPrincipal } from "@/lib/auth/principal";
import { startReplayWorker } from "@/lib/replay/executor";
import { FAILING_AFTER, replayHealth, stallAfterMs, type HealthInput } from "@/lib/replay/health";
import { createPreflight } from "@/lib/replay/preflight";
import { changeReplay, getReplay, startReplay } from "@/lib/replay/replays";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { startReceiver, type ReceiverOptions } from "@/test/setup/receiver";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";
import { useClaimApi } from "@/test/setup/claim-api";

const ACTOR = cliPrincipal();
const S = 1000;

describe("replayHealth (pure)", () => {
  const now = new Date("2026-12-05T12:00:00.000Z");
  const ago = (ms: number) => new Date(now.getTime() - ms);
  const input = (over: Partial<HealthInput> = {}): HealthInput => ({
    status: "running",
    ratePerSecond: 50,
    runningSince: ago(60 * S),
    lastSettledAt: ago(1 * S),
    consecutiveFailures: 0,
    lastError: null,
    lastErrorAt: null,
    ...over,
  });

  it("stalls after 30 intervals of the rate, never sooner than the timeout + the longest retry wait + 5 s", () => {
    expect(stallAfterMs(50, 10_000)).toBe(23_000); // 10 s + 8 s + 5 s
    expect(stallAfterMs(500, 10_000)).toBe(23_000);
    expect(stallAfterMs(1, 10_000)).toBe(30_000); // 30 × 1 s
    expect(stallAfterMs(50, 60_000)).toBe(73_000);
  });

  it("ok while results come; stalled once none came for longer than that, since the last result or the (re)start", () => {
    expect(replayHealth(input(), now, 10_000)).toMatchObject({ state: "ok", reason: null });
    expect(replayHealth(input({ lastSettledAt: ago(23 * S) }), now, 10_000).state).toBe("ok"); // the bound itself
    const stalled = replayHealth(input({ lastSettledAt: ago(23 * S + 1) }), now, 10_000);
    expect(stalled.state).toBe("stalled");
    expect(stalled.reason).toBe("no item's result recorded for 23 s (stalled after 23 s at 50/s)");
    // Nothing recorded yet: counted from when it started running; a resume restarts that clock.
    expect(replayHealth(input({ lastSettledAt: null, runningSince: ago(40 * S) }), now, 10_000).reason).toMatch(/^nothing recorded since it started running for 40 s/);
    expect(replayHealth(input({ lastSettledAt: ago(600 * S), runningSince: ago(2 * S) }), now, 10_000).state).toBe("ok");
    // Only a running replay stalls; a finished one has no health (its outcome says how it ended).
    expect(replayHealth(input({ status: "paused", lastSettledAt: ago(600 * S) }), now, 10_000).state).toBe("ok");
    for (const status of ["completed", "cancelled"] as const) {
      expect(replayHealth(input({ status, lastSettledAt: ago(600 * S) }), now, 10_000).state).toBe("finished");
    }
    // Items waiting for a retry not due yet are no stall; once due, the clock runs from then.
    expect(replayHealth(input({ lastSettledAt: ago(600 * S), dueAt: new Date(now.getTime() + 300 * S) }), now, 10_000).state).toBe("ok");
    expect(replayHealth(input({ lastSettledAt: ago(600 * S), dueAt: ago(10 * S) }), now, 10_000).state).toBe("ok");
    expect(replayHealth(input({ lastSettledAt: ago(600 * S), dueAt: ago(30 * S) }), now, 10_000).state).toBe("stalled");
  });

  it(`failing after ${FAILING_AFTER} consecutive failed attempts (running or paused), with the latest error; stalled wins`, () => {
    const err = { lastError: "HTTP 500 Internal Server Error: boom", lastErrorAt: ago(2 * S) };
    expect(replayHealth(input({ consecutiveFailures: FAILING_AFTER - 1, ...err }), now, 10_000).state).toBe("ok");
    const failing = replayHealth(input({ consecutiveFailures: FAILING_AFTER, ...err }), now, 10_000);
    expect(failing).toEqual({
      state: "failing",
      reason: `the last ${FAILING_AFTER} attempts failed; the latest: HTTP 500 Internal Server Error: boom`,
      lastSettledAt: ago(1 * S).toISOString(),
      consecutiveFailures: FAILING_AFTER,
      lastError: err.lastError,
      lastErrorAt: err.lastErrorAt.toISOString(),
    });
    expect(replayHealth(input({ status: "paused", consecutiveFailures: 9, ...err }), now, 10_000).state).toBe("failing");
    expect(replayHealth(input({ status: "completed", consecutiveFailures: 9, ...err }), now, 10_000).state).toBe("finished");
    expect(replayHealth(input({ consecutiveFailures: 9, ...err, lastSettledAt: ago(60 * S) }), now, 10_000).state).toBe("stalled");
  });
});

const claimApi = useClaimApi();
const { receivers, workers } = claimApi;
let claimsKey: string;
let readKey: string;
const sources: string[] = [];

beforeAll(async () => {
  claimsKey = (await makeApiKey(["claims:write"])).key;
  readKey = (await makeApiKey(["read"])).key;
});

type Handler = (req: Request, ctx?: { params: Promise<Record<string, string>> }) => Promise<Response>;
async function get(handler: Handler, path: string, params: Record<string, string> = {}) {
  const res = await handler(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${readKey}` } }), {
    params: Promise.resolve(params),
  });
  return { status: res.status, body: JSON.parse(await res.text()) };
}

/** Waits (bounded) until `check` holds. */
async function until(what: string, check: () => Promise<boolean> | boolean, ms = 60_000) {
  await expect.poll(check, { timeout: ms, interval: 50, message: what }).toBe(true);
}

/** A source replaying `n` dead letters to a receiver with these knobs, and a worker of this file driving it. */
async function running(n: number, rx: Partial<ReceiverOptions>, o: { concurrency?: number; timeoutMs?: number; worker?: boolean } = {}) {
  const source = await makeSource();
  sources.push(source);
  const receiver = await startReceiver({ keywardUrl: claimApi.url(), apiKey: claimsKey, source, ...rx });
  receivers.push(receiver);
  receiver.setSecret(await readyForReplay(source, receiver.url));
  await seedDeadLetters(source, Array.from({ length: n }, (_, i) => `evt-${i}-${uniq()}`));
  const pf = await createPreflight({ source }, ACTOR);
  const { replayId } = await startReplay(
    { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 50, concurrency: o.concurrency ?? 4 },
    uniq("k"),
    ACTOR,
  );
  if (o.worker !== false) {
    workers.push(
      startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: o.timeoutMs ?? 5000, log: () => {}, sources: () => [source] }),
    );
  }
  return { source, receiver, replayId };
}

describe("health of running replays", { timeout: 120_000 }, () => {
  it("a receiver answering 500: failing, with the latest error and its time, in the list, the replay and the Overview", async () => {
    const { source, replayId } = await running(6, { failureRate: 1, failStatus: 500, failBody: "database is down" });
    await until("failing", async () => (await getReplay(replayId)).health.state === "failing");

    const one = await get(getRoute, `/api/v1/replays/${replayId}`, { id: replayId });
    expect(one.status).toBe(200);
    expect(one.body.status).toBe("running");
    expect(one.body.health).toMatchObject({ state: "failing", lastError: "HTTP 500 Internal Server Error: database is down" });
    expect(one.body.health.consecutiveFailures).toBeGreaterThanOrEqual(FAILING_AFTER);
    expect(one.body.health.reason).toMatch(/^the last \d+ attempts failed; the latest: HTTP 500 Internal Server Error: database is down$/);
    const [db] = await sql<{ now: Date }>("SELECT now()");
    const at = Date.parse(one.body.health.lastErrorAt);
    expect(at).toBeLessThanOrEqual(db.now.getTime() + 1000);
    expect(at).toBeGreaterThan(db.now.getTime() - 60_000);
    expect(one.body.destination).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhook$/);

    const list = await get(listRoute, `/api/v1/replays?source=${source}`);
    expect(list.status).toBe(200);
    expect(list.body.items.map((r: { id: string; health: { state: string } }) => [r.id, r.health.state])).toEqual([[replayId, "failing"]]);

    const overview = await get(overviewRoute, "/api/v1/overview");
    expect(overview.status).toBe(200);
    expect(overview.body.replays.failing).toBeGreaterThanOrEqual(1);
    expect(overview.body.replays.unhealthy).toBe(overview.body.replays.stalled + overview.body.replays.failing);
    expect(overview.body.replays.running).toBeGreaterThanOrEqual(overview.body.replays.unhealthy);

    // Paused, it still says failing (the destination still refuses); resumed, the streak starts again.
    await changeReplay(replayId, "pause", ACTOR);
    await until("paused and idle", async () => {
      const r = await getReplay(replayId);
      return r.status === "paused" && r.counts.delivering === 0;
    });
    expect((await getReplay(replayId)).health.state).toBe("failing");
    for (const w of workers.splice(0)) await w.stop();
    await changeReplay(replayId, "resume", ACTOR);
    const resumed = await getReplay(replayId);
    expect(resumed.health).toMatchObject({ state: "ok", consecutiveFailures: 0, lastError: "HTTP 500 Internal Server Error: database is down" });
    await changeReplay(replayId, "cancel", ACTOR);
  });

  it("a receiver that recovers: the failure streak ends with the next delivery", async () => {
    const { receiver, replayId } = await running(30, { failureRate: 1, failStatus: 500, failBody: "not yet" }, { concurrency: 2 });
    await until("failing", async () => (await getReplay(replayId)).health.state === "failing");
    receiver.setFailureRate(0);
    await until("a delivery", async () => (await getReplay(replayId)).counts.delivered > 0);
    await until("ok again", async () => (await getReplay(replayId)).health.state === "ok");
    expect((await getReplay(replayId)).health.lastError).toBe("HTTP 500 Internal Server Error: not yet");
    await changeReplay(replayId, "cancel", ACTOR);
  });

  it("a receiver that hangs: nothing is recorded, and the replay reads stalled once that lasted too long", async () => {
    const { receiver, replayId, source } = await running(4, { hang: true }, { timeoutMs: 120_000 });
    await until("deliveries hanging", () => receiver.snapshot().hung >= 4);
    const fresh = await getReplay(replayId);
    expect(fresh.health.state).toBe("ok");
    expect(fresh.counts.delivering).toBe(4);
    // As if it had hung for five minutes: its clocks moved back (rather than waiting).
    await sql("UPDATE replays SET running_since = running_since - interval '5 minutes' WHERE id = $1", [replayId]);
    const one = await get(getRoute, `/api/v1/replays/${replayId}`, { id: replayId });
    expect(one.body.health.state).toBe("stalled");
    expect(one.body.health.reason).toMatch(/^nothing recorded since it started running for 3\d\d s \(stalled after 23 s at 50\/s\)$/);
    expect(one.body.health.lastSettledAt).toBeNull();
    const list = await get(listRoute, `/api/v1/replays?source=${source}`);
    expect(list.body.items[0].health.state).toBe("stalled");
    const overview = await get(overviewRoute, "/api/v1/overview");
    expect(overview.body.replays.stalled).toBeGreaterThanOrEqual(1);
    await changeReplay(replayId, "cancel", ACTOR);
    for (const w of workers.splice(0)) await w.stop();
  });

  it("a replay held by a dead worker's lease: stalled, and a pause and resume make it ok again", async () => {
    const { replayId } = await running(3, {}, { worker: false });
    await sql(
      `UPDATE replays SET worker = 'dead-worker', worker_lease_until = now() + interval '1 hour',
              running_since = now() - interval '2 minutes' WHERE id = $1`,
      [replayId],
    );
    // Its items were queued then too: due since.
    await sql("UPDATE replay_items SET next_attempt_at = now() - interval '2 minutes' WHERE replay_id = $1", [replayId]);
    const r = await getReplay(replayId);
    expect(r.health).toMatchObject({ state: "stalled", lastSettledAt: null, consecutiveFailures: 0 });
    expect(r.counts.pending).toBe(3);
    await changeReplay(replayId, "pause", ACTOR);
    expect((await getReplay(replayId)).health.state).toBe("ok");
    await changeReplay(replayId, "resume", ACTOR);
    expect((await getReplay(replayId)).health.state).toBe("ok");
    await changeReplay(replayId, "cancel", ACTOR);
  });

  it("a replay delivering normally stays ok and records when it last settled", async () => {
    const { replayId } = await running(5, {});
    await until("completion", async () => (await getReplay(replayId)).status === "completed");
    const r = await getReplay(replayId);
    expect(r.counts.delivered).toBe(5);
    expect(r.outcome).toBe("succeeded");
    expect(r.health).toMatchObject({ state: "finished", consecutiveFailures: 0, lastError: null, lastErrorAt: null });
    expect(r.health.lastSettledAt).not.toBeNull();
  });
});
