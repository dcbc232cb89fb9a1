/**
 * keyward/client against the real server (issue 16 §3): every client method, typed errors (4xx never
 * retried, network failures and timeouts retried), the attemptId retry of a claim whose answer was lost on
 * the network (a TCP proxy between client and server drops it), and withIdempotency: a handler that
 * throws (key released, the next delivery processed), a concurrent duplicate delivery (exactly one run),
 * a duplicate after completion (a neutral 200, handler not run), the body still readable by the handler, and
 * the node:http adapter. Issue 25's table (leases, saved results, lost answers) is scenarios.test.ts.
 */
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKeywardClient, KeywardApiError, withIdempotency, type KeywardClient } from "@/lib/client";
import { toNodeHandler } from "@/lib/client/node";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { reservePort, stopServer, type Server } from "@/test/setup/server";
import { startTestServer } from "@/test/setup/auth";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";

const spawned: Server[] = [];
let baseUrl: string;
let key: string;
let client: KeywardClient;
let source: string;

beforeAll(async () => {
  ({ baseUrl } = await startTestServer(spawned));
  key = (await makeApiKey(["claims:write", "deadletters:write"])).key;
  client = createKeywardClient({ baseUrl, apiKey: key, retryDelayMs: 20 });
  source = await makeSource();
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

describe("client methods", () => {
  it("claim: claimed (with an attemptId), duplicate, in_flight under a lease; complete; state", async () => {
    const eventId = uniq("evt");
    const first = await client.claim({ source, eventId, eventType: "order.paid", leaseSeconds: 60 });
    expect(first).toMatchObject({ outcome: "claimed", status: "processing", claimKind: "claimed" });
    expect(first.claimToken).toMatch(/^[0-9a-f-]{36}$/);
    const [row] = await sql<{ attempt_id: string | null }>("SELECT attempt_id FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId]);
    expect(row.attempt_id).toMatch(/^[0-9a-f-]{36}$/); // a random UUID per logical claim

    const busy = await client.claim({ source, eventId, eventType: "order.paid" });
    expect(busy.outcome).toBe("in_flight");
    expect(busy.leaseExpiresAt).toBeDefined();

    const done = await client.complete({ source, eventId, claimToken: first.claimToken! });
    expect(done).toMatchObject({ source, eventId, status: "done" });
    expect(await client.claim({ source, eventId, eventType: "order.paid" })).toMatchObject({ outcome: "duplicate", status: "done" });

    const state = await client.state({ source, eventId });
    expect(state).toMatchObject({ state: "alive", status: "done", eventType: "order.paid" });
    expect((await client.state({ source, eventId: uniq("never") })).state).toBe("unknown");
  });

  it("claim with the caller's own attemptId: a retry of it answers claimed + repeat", async () => {
    const eventId = uniq("evt");
    const attemptId = crypto.randomUUID();
    const a = await client.claim({ source, eventId, eventType: "t", attemptId, leaseSeconds: 30 });
    const b = await client.claim({ source, eventId, eventType: "t", attemptId, leaseSeconds: 30 });
    expect(b).toMatchObject({ outcome: "claimed", repeat: true, claimToken: a.claimToken });
  });

  it("claimBatch answers each event in input order; release frees a key", async () => {
    const ids = [uniq("b"), uniq("b"), uniq("b")];
    await client.claim({ source, eventId: ids[1], eventType: "t" });
    const results = await client.claimBatch({ source, events: ids.map((eventId) => ({ eventId, eventType: "t" })), leaseSeconds: 30 });
    expect(results.map((r) => [r.eventId, r.outcome])).toEqual([
      [ids[0], "claimed"],
      [ids[1], "duplicate"],
      [ids[2], "claimed"],
    ]);
    const released = await client.release({ source, eventId: ids[0], claimToken: results[0].claimToken });
    expect(released).toMatchObject({ eventId: ids[0], status: "released" });
    expect((await client.state({ source, eventId: ids[0] })).state).toBe("unknown");
  });

  it("deadLetter and deadLetters store letters (an invalid batch item is its own error)", async () => {
    const eventId = uniq("dl");
    const one = await client.deadLetter({ source, eventId, eventType: "t", payload: { a: 1 }, error: "boom" });
    expect(one.id).toBeTruthy();
    const [row] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dead_letters WHERE id = $1", [one.id]);
    expect(row.n).toBe(1);
    const results = await client.deadLetters([
      { source, eventId: uniq("dl"), eventType: "t", payload: [1, 2], error: "x" },
      { source, eventId: "", eventType: "t", payload: 1, error: "x" },
    ]);
    expect("id" in results[0]).toBe(true);
    expect("error" in results[1]).toBe(true);
  });

  it("typed errors: a 4xx names the problem and is not retried; a wrong key is a 401", async () => {
    let calls = 0;
    const counting = createKeywardClient({ baseUrl, apiKey: key, fetch: (u, i) => (calls++, fetch(u, i)), retryDelayMs: 1 });
    const err = await counting.claim({ source, eventId: "", eventType: "t" }).catch((e) => e);
    expect(err).toBeInstanceOf(KeywardApiError);
    expect(err).toMatchObject({ status: 422, retryable: false });
    expect(err.message).toMatch(/eventId/);
    expect(calls).toBe(1);

    const wrongToken = await client.complete({ source, eventId: uniq("none"), claimToken: crypto.randomUUID() }).catch((e) => e);
    expect(wrongToken).toMatchObject({ status: 404, code: "key_not_found", retryable: false });

    const bad = createKeywardClient({ baseUrl, apiKey: "kw_not_a_key" });
    expect(await bad.state({ source, eventId: "x" }).catch((e) => e)).toMatchObject({ status: 401, code: "unauthorized" });
  });

  it("network failures are retryable and retried `retries` times, then thrown with status 0", async () => {
    const closed = await reservePort();
    let calls = 0;
    const down = createKeywardClient({
      baseUrl: `http://127.0.0.1:${closed}`,
      apiKey: key,
      retries: 2,
      retryDelayMs: 1,
      fetch: (u, i) => (calls++, fetch(u, i)),
    });
    const err = await down.claim({ source, eventId: uniq("e"), eventType: "t" }).catch((e) => e);
    expect(err).toBeInstanceOf(KeywardApiError);
    expect(err).toMatchObject({ status: 0, code: "network_error", retryable: true });
    expect(calls).toBe(3);
  });
});

describe("ambiguous failure: the answer of a committed claim is lost", () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(new URL(baseUrl).port) });
  });
  afterAll(async () => {
    await proxy.close();
  });

  it("the retry resends the same attemptId and gets claimed + repeat with the committed token", async () => {
    const eventId = uniq("lost");
    const bodies: string[] = [];
    let calls = 0;
    const viaProxy = createKeywardClient({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      apiKey: key,
      timeoutMs: 1500,
      retries: 2,
      retryDelayMs: 10,
      fetch: (u, init) => {
        calls++;
        bodies.push(String(init?.body));
        // The first request reaches the server and its answer is dropped: it fails (times out) no sooner than
        // its claim has committed, so the retry follows the commit. The network heals for the retry.
        if (calls === 1) {
          proxy.blackholeAfter(eventId);
          return fetch(u, init).catch(async (err: unknown) => {
            await expect.poll(() => sql("SELECT 1 FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId])).toHaveLength(1);
            throw err;
          });
        }
        proxy.setMode("forward");
        return fetch(u, init);
      },
    });
    const result = await viaProxy.claim({ source, eventId, eventType: "t", leaseSeconds: 60 });
    // A retry, or two if the first retry's answer was slower than its timeout: each resends the same attemptId.
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(new Set(bodies).size).toBe(1);
    expect(result).toMatchObject({ outcome: "claimed", repeat: true, claimKind: "claimed" });
    // The claim that committed is this one: its token completes it; no duplicate was counted.
    const [row] = await sql<{ claim_token: string; duplicate_count: number }>(
      "SELECT claim_token, duplicate_count FROM dedup_keys WHERE source = $1 AND event_id = $2",
      [source, eventId],
    );
    expect(row).toEqual({ claim_token: result.claimToken, duplicate_count: 0 });
    expect(await client.complete({ source, eventId, claimToken: result.claimToken! })).toMatchObject({ status: "done" });
  });

  it("without a retry the lost answer is a timeout error (status 0, retryable)", async () => {
    const eventId = uniq("lost");
    proxy.blackholeAfter(eventId);
    const noRetry = createKeywardClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, apiKey: key, timeoutMs: 800, retries: 0 });
    const err = await noRetry.claim({ source, eventId, eventType: "t" }).catch((e) => e);
    proxy.setMode("forward");
    expect(err).toMatchObject({ status: 0, code: "timeout", retryable: true });
  });
});

/** A webhook delivery as a sender makes it: the event id in the JSON body. */
function delivery(eventId: string, body: Record<string, unknown> = {}): Request {
  return new Request("http://service.local/webhooks", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: eventId, ...body }),
  });
}

const fromBody = async (req: Request) => ((await req.json()) as { id: string }).id;

describe("withIdempotency", () => {
  it("runs the handler once, hands it the claim and the whole body, completes; a duplicate answers 200 without running", async () => {
    const eventId = uniq("wh");
    const seen: unknown[] = [];
    const handler = withIdempotency(
      async (req, info) => {
        seen.push({ body: await req.json(), info });
        return Response.json({ ok: true }, { status: 202 });
      },
      { client, source, eventId: fromBody, eventType: "payment", leaseSeconds: 30 },
    );
    const res = await handler(delivery(eventId, { amount: 5 }));
    expect(res.status).toBe(202);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ body: { id: eventId, amount: 5 }, info: { source, eventId, claim: { outcome: "claimed" } } });
    expect((await client.state({ source, eventId })).status).toBe("done");

    // Without a saved result: a neutral 200, none of Keyward's internal fields.
    const again = await handler(delivery(eventId, { amount: 5 }));
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await again.json()).toEqual({ received: true });
    expect(seen).toHaveLength(1);
  });

  it("a handler that throws: the error is rethrown, the key released, and the next delivery processed", async () => {
    const eventId = uniq("wh");
    let runs = 0;
    const handler = withIdempotency(
      async () => {
        runs++;
        if (runs === 1) throw new Error("downstream down");
        return new Response("ok");
      },
      { client, source, eventId: fromBody },
    );
    await expect(handler(delivery(eventId))).rejects.toThrow("downstream down");
    expect((await client.state({ source, eventId })).state).toBe("unknown");
    const retry = await handler(delivery(eventId));
    expect(retry.status).toBe(200);
    expect(await retry.text()).toBe("ok");
    expect(runs).toBe(2);
    expect((await client.state({ source, eventId })).status).toBe("done");
  });

  it("a 5xx answer releases the key too", async () => {
    const eventId = uniq("wh");
    const handler = withIdempotency(async () => new Response("bad gateway", { status: 502 }), { client, source, eventId: fromBody });
    expect((await handler(delivery(eventId))).status).toBe(502);
    expect((await client.state({ source, eventId })).state).toBe("unknown");
  });

  it("a duplicate delivered while the first runs gets 409 + Retry-After; racing deliveries run the handler once", async () => {
    const eventId = uniq("wh");
    let runs = 0;
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    let finish!: () => void;
    const gate = new Promise<void>((r) => (finish = r));
    const handler = withIdempotency(
      async () => {
        runs++;
        entered();
        await gate;
        return new Response("done");
      },
      { client, source, eventId: fromBody, leaseSeconds: 45 },
    );
    const first = handler(delivery(eventId));
    await inHandler;
    const second = await handler(delivery(eventId));
    expect(second.status).toBe(409);
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThanOrEqual(40);
    expect((await second.json()).error.code).toBe("in_flight");
    finish();
    expect((await first).status).toBe(200);
    expect(runs).toBe(1);

    // Eight deliveries of one new event at once: exactly one runs, and it runs until the seven others are
    // answered, so each of them answers 409 (a second run would open the gate too, and fail the count).
    const raced = uniq("wh");
    let racedRuns = 0;
    let answered = 0;
    let othersAnswered!: () => void;
    const racedGate = new Promise<void>((r) => (othersAnswered = r));
    const racing = withIdempotency(
      async () => {
        if (++racedRuns > 1) othersAnswered();
        await racedGate;
        return new Response("done");
      },
      { client, source, eventId: fromBody },
    );
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        racing(delivery(raced)).then((a) => {
          if (++answered === 7) othersAnswered();
          return a;
        }),
      ),
    );
    expect(racedRuns).toBe(1);
    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
  });

  it("Keyward unreachable: 503 + Retry-After, and the handler does not run", async () => {
    const closed = await reservePort();
    let runs = 0;
    const handler = withIdempotency(async () => (runs++, new Response("ran")), {
      client: createKeywardClient({ baseUrl: `http://127.0.0.1:${closed}`, apiKey: key, retries: 0 }),
      source,
      eventId: fromBody,
    });
    const res = await handler(delivery(uniq("wh")));
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBeTruthy();
    expect(runs).toBe(0);
  });

  it("serves on node:http through toNodeHandler", async () => {
    const eventId = uniq("wh");
    const server = http.createServer(
      toNodeHandler(withIdempotency(async (req) => new Response(`got ${(await req.json()).id}`), { client, source, eventId: fromBody })),
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
      const send = () => fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: eventId }) });
      const a = await send();
      expect([a.status, await a.text()]).toEqual([200, `got ${eventId}`]);
      const b = await send();
      expect(b.status).toBe(200);
      expect(await b.json()).toEqual({ received: true });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
