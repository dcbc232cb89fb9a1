/**
 * Retry failed (issue 13 §9): POST /api/v1/replays/{id}/retry-failed (through the route handler, an
 * operator's key) answers a new preflight of a finished replay's failures, classified by the same rules
 * as any preflight; the operator starts it the normal way and the executor delivers it. 404 unknown, 409
 * while running or paused, 409 when nothing is left to retry; not for a read-only key.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parseInput } from "@/lib/http/validate";
import { startReplayRequest } from "@/lib/replay/schema";
import { POST as retryRoute } from "@/app/api/v1/replays/[id]/retry-failed/route";
import { POST as startRoute } from "@/app/api/v1/replays/route";
import { claimEvent } from "@/lib/claims/claim";
import { cliPrincipal } from "@/lib/auth/principal";
import { startReplayWorker, type ReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { changeReplay, getReplay, startReplay } from "@/lib/replay/replays";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { readyForReplay, seedDeadLetters, setKeyExpiry } from "@/test/setup/replay";

const ACTOR = cliPrincipal();
const servers: http.Server[] = [];
const workers: ReplayWorker[] = [];
afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop();
});
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A destination that refuses (400) the events in `refuse` and accepts the others. */
async function destination(refuse: Set<string>) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const id = decodeURIComponent(String(req.headers["keyward-event-id"]));
      if (refuse.has(id)) res.writeHead(400).end("unknown order");
      else res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

type Handler = (req: Request, ctx?: { params: Promise<Record<string, string>> }) => Promise<Response>;
async function post(handler: Handler, key: string, path: string, o: { params?: Record<string, string>; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await handler(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, ...(o.body === undefined ? {} : { "content-type": "application/json" }), ...o.headers },
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    }),
    { params: Promise.resolve(o.params ?? {}) },
  );
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Waits (bounded) until `check` holds. */
async function until(what: string, check: () => Promise<boolean>, ms = 60_000) {
  await expect.poll(check, { timeout: ms, interval: 50, message: what }).toBe(true);
}

describe("retry failed", { timeout: 90_000 }, () => {
  it("a new preflight of the failed items, classified as any (an unsafe one stays unticked), confirmed the normal way", async () => {
    const operator = (await makeApiKey(["operator"])).key;
    const source = await makeSource(7 * 86400);
    const ok = Array.from({ length: 3 }, () => `ok-${uniq()}`);
    const refusedFresh = `refused-${uniq()}`;
    const refusedProcessed = `processed-${uniq()}`;
    const refuse = new Set([refusedFresh, refusedProcessed]);
    await readyForReplay(source, await destination(refuse));
    await claimEvent({ source, eventId: refusedProcessed, eventType: "t" }); // processed: key alive for now
    const letters = await seedDeadLetters(source, [...ok, refusedFresh, refusedProcessed]);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["alive", "never_processed"] }), uniq("k"), ACTOR);

    // Not finished yet: 409.
    const early = await post(retryRoute, operator, `/api/v1/replays/${replayId}/retry-failed`, { params: { id: replayId } });
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe("replay_not_finished");

    workers.push(startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: () => {}, sources: () => [source] }));
    await until("completion", async () => (await getReplay(replayId)).status === "completed");
    expect((await getReplay(replayId)).counts).toMatchObject({ delivered: 3, failed: 2 });

    // Meanwhile the processed one's key expired: retrying it now would process it twice.
    await setKeyExpiry(source, refusedProcessed, -10);
    const retried = await post(retryRoute, operator, `/api/v1/replays/${replayId}/retry-failed`, { params: { id: replayId } });
    expect(retried.status).toBe(201);
    expect(retried.body).toMatchObject({ source, retryOf: replayId, truncated: false });
    expect(retried.body.preflightId).not.toBe(pf.preflightId);
    expect(retried.body.counts).toMatchObject({ total: 2, never_processed: 1, expired_processed: 1 });
    const byEvent = Object.fromEntries(retried.body.items.map((i: { eventId: string; category: string }) => [i.eventId, i.category]));
    expect(byEvent).toEqual({ [refusedFresh]: "never_processed", [refusedProcessed]: "expired_processed" });
    expect(retried.body.items.map((i: { deadLetterId: string }) => i.deadLetterId).sort()).toEqual(letters.slice(3).sort());

    // The same rules as any preflight: the unsafe one needs a reason; the safe one starts as usual.
    const forced = await post(startRoute, operator, "/api/v1/replays", {
      body: { preflightId: retried.body.preflightId, include: ["never_processed", "expired_processed"] },
      headers: { "idempotency-key": uniq("idem") },
    });
    expect(forced.status).toBe(422);
    expect(forced.body.error.code).toBe("force_required");
    refuse.clear(); // the destination was fixed
    const started = await post(startRoute, operator, "/api/v1/replays", {
      body: { preflightId: retried.body.preflightId, include: ["never_processed"] },
      headers: { "idempotency-key": uniq("idem") },
    });
    expect(started.status).toBe(202);
    expect(started.body.total).toBe(1);
    await until("the retry completes", async () => (await getReplay(started.body.replayId)).status === "completed");
    expect((await getReplay(started.body.replayId)).counts.delivered).toBe(1);

    // Retrying the first replay again: only the expired_processed letter is still pending.
    const again = await post(retryRoute, operator, `/api/v1/replays/${replayId}/retry-failed`, { params: { id: replayId } });
    expect(again.status).toBe(201);
    expect(again.body.counts).toMatchObject({ total: 1, expired_processed: 1 });
    const [stored] = await sql<{ retry_of: string }>("SELECT retry_of FROM replay_preflights WHERE id = $1", [again.body.preflightId]);
    expect(stored.retry_of).toBe(replayId);
  });

  it("404 for an unknown replay, 409 when nothing failed, 409 while paused; a read-only key is refused", async () => {
    const operator = (await makeApiKey(["operator"])).key;
    const reader = (await makeApiKey(["read"])).key;
    const unknown = "00000000-0000-4000-8000-000000000000";
    const missing = await post(retryRoute, operator, `/api/v1/replays/${unknown}/retry-failed`, { params: { id: unknown } });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("replay_not_found");
    expect((await post(retryRoute, operator, "/api/v1/replays/nope/retry-failed", { params: { id: "nope" } })).status).toBe(404);

    const source = await makeSource();
    await readyForReplay(source, "http://127.0.0.1:9/never");
    await seedDeadLetters(source, [`a-${uniq()}`, `b-${uniq()}`]);
    const pf = await createPreflight({ source }, ACTOR);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"] }), uniq("k"), ACTOR);
    await changeReplay(replayId, "pause", ACTOR);
    const paused = await post(retryRoute, operator, `/api/v1/replays/${replayId}/retry-failed`, { params: { id: replayId } });
    expect(paused.status).toBe(409);
    expect(paused.body.error.message).toMatch(/is paused/);
    await changeReplay(replayId, "cancel", ACTOR);
    const nothing = await post(retryRoute, operator, `/api/v1/replays/${replayId}/retry-failed`, { params: { id: replayId } });
    expect(nothing.status).toBe(409);
    expect(nothing.body.error.code).toBe("nothing_to_retry");
    expect((await post(retryRoute, reader, `/api/v1/replays/${replayId}/retry-failed`, { params: { id: replayId } })).status).toBe(403);
  });
});
