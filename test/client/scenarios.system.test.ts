/**
 * Issue 25's table, row by row, against a real `keyward start`, with withIdempotency as a service team
 * would wire it (lease 3 s, saved results on) and a TCP proxy between the service and Keyward for the
 * lost answers and the Keyward-down windows. Each row runs its own events through its own proxy, the rows
 * concurrently. What must hold: the slow handler runs once (its lease is extended while it runs), a lost
 * `complete` is recovered by retry, duplicates get the first run's response byte for byte, a run whose
 * lease was taken over never answers a success, a malformed body is a 400, and the payload-hash rule.
 * The server runs with the Redis first line on (the machine's Redis): a duplicate it could answer from
 * Redis must still carry the saved result, and a first payload hash must still reach PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createKeywardClient, IdempotencyError, withIdempotency, type IdempotencyInfo, type KeywardClient, type WithIdempotencyOptions } from "@/lib/client";
import { makeSource, sql, uniq, untilDatabaseClockPasses } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { startTestServer } from "@/test/setup/auth";
import { startTcpProxy, type TcpProxy } from "@/test/setup/tcp-proxy";
import { timePasses } from "@/test/setup/time";

const LEASE = 3;
const METRICS_TOKEN = "client-scenarios-metrics-token-0123456789abcdef";
const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const spawned: Server[] = [];
const proxies: TcpProxy[] = [];
let port: number;
let key: string;
let source: string;

beforeAll(async () => {
  const { baseUrl } = await startTestServer(spawned, { KEYWARD_REDIS_URL: REDIS_URL, KEYWARD_METRICS_TOKEN: METRICS_TOKEN });
  port = Number(new URL(baseUrl).port);
  key = (await makeApiKey(["claims:write"])).key;
  source = await makeSource();
  await sql("UPDATE sources SET save_results = true WHERE name = $1", [source]);
});

afterAll(async () => {
  for (const p of proxies) await p.close();
  for (const s of spawned) await stopServer(s);
});

/** A Keyward client of its own, through a proxy of its own. */
async function throughProxy(o: { timeoutMs?: number; retries?: number; fetch?: (p: TcpProxy) => typeof fetch } = {}): Promise<{ proxy: TcpProxy; client: KeywardClient }> {
  const proxy = await startTcpProxy({ host: "127.0.0.1", port });
  proxies.push(proxy);
  const client = createKeywardClient({
    baseUrl: `http://127.0.0.1:${proxy.port}`,
    apiKey: key,
    timeoutMs: o.timeoutMs ?? 2000,
    retries: o.retries ?? 2,
    retryDelayMs: 20,
    ...(o.fetch ? { fetch: o.fetch(proxy) } : {}),
  });
  return { proxy, client };
}

type Handler = (req: Request, info: IdempotencyInfo) => Promise<Response>;

/** The service's webhook endpoint: the event id in the JSON body, lease 3 s, its answers saved. */
function endpoint(client: KeywardClient, handler: Handler, extra: Partial<WithIdempotencyOptions> = {}) {
  const errors: [unknown, string][] = [];
  const wrapped = withIdempotency(handler, {
    client,
    source,
    eventId: async (req) => ((await req.json()) as { id: string }).id,
    eventType: "payment",
    leaseSeconds: LEASE,
    saveResult: true,
    onError: (err, phase) => errors.push([err, phase]),
    ...extra,
  });
  return { wrapped, errors };
}

/** A sender's delivery of an event (its body the same bytes each time). */
function delivery(eventId: string, raw?: string): Request {
  return new Request("http://service.local/webhooks", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: raw ?? JSON.stringify({ id: eventId, amount: 42 }),
  });
}

/** What a sender sees: the status, the body's bytes, and whether it was replayed. A thrown handler error is a 500. */
async function send(wrapped: (req: Request) => Promise<Response>, req: Request) {
  try {
    const res = await wrapped(req);
    return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()), replayed: res.headers.get("idempotent-replayed") === "true", res };
  } catch {
    return { status: 500, bytes: Buffer.alloc(0), replayed: false, res: undefined };
  }
}

/**
 * A sender that delivers until it gets a 2xx (at most 10 times), waiting as Retry-After says (at most 4 s),
 * as webhook senders do. Keyward may answer 503 under load (and a claim whose answers all timed out holds
 * its lease, 409, until it lapses): the sender simply retries. The answers, in order.
 */
async function deliverUntilAccepted(wrapped: (req: Request) => Promise<Response>, eventId: string) {
  const answers: Awaited<ReturnType<typeof send>>[] = [];
  for (let i = 0; i < 10; i++) {
    const a = await send(wrapped, delivery(eventId));
    answers.push(a);
    if (a.status < 300) break;
    const retryAfter = Math.min(4000, 1000 * Number(a.res?.headers.get("retry-after") ?? 0)) || 50;
    await timePasses(retryAfter, "a sender waits as Retry-After says (at most 4 s; 50 ms when it says nothing) before it delivers again");
  }
  return answers;
}

/** The latest of some ISO instants (a lease end the database set). */
const latest = (instants: string[]) => [...instants].sort().at(-1)!;
const counted = () => {
  const runs = new Map<string, number>();
  return { runs, count: (id: string) => runs.set(id, (runs.get(id) ?? 0) + 1).get(id)! };
};

async function keyStates(ids: string[]) {
  return sql<{ event_id: string; status: string; result_status: number | null }>(
    "SELECT event_id, status, result_status FROM dedup_keys WHERE source = $1 AND event_id = ANY($2) ORDER BY event_id",
    [source, ids],
  );
}

describe("issue 25's scenarios (lease 3 s)", () => {
  it("handler throws, then succeeds — 20 events: one success each, and a duplicate gets that success", async () => {
    const { client } = await throughProxy();
    const { runs, count } = counted();
    const { wrapped } = endpoint(client, async (req, { eventId }) => {
      if (count(eventId) === 1) throw new Error("downstream down");
      return Response.json({ charged: eventId, run: runs.get(eventId) });
    });
    const ids = Array.from({ length: 20 }, () => uniq("throws"));
    const delivered = await Promise.all(ids.map((id) => deliverUntilAccepted(wrapped, id)));
    for (const answers of delivered) {
      const statuses = answers.map((a) => a.status);
      // The throw (500), any 503 Keyward answered under load, then the one success.
      expect(statuses.at(-1)).toBe(200);
      expect(statuses.filter((s) => s === 500)).toHaveLength(1);
      expect(statuses.slice(0, -1).every((s) => s === 500 || s === 503 || s === 409)).toBe(true);
    }
    const again = await Promise.all(ids.map((id) => send(wrapped, delivery(id))));
    for (const [i, a] of again.entries()) {
      expect([a.status, a.replayed]).toEqual([200, true]);
      expect(a.bytes.equals(delivered[i].at(-1)!.bytes)).toBe(true);
    }
    expect([...runs.values()]).toEqual(ids.map(() => 2));
  });

  it("Keyward unreachable, then healed — 10 events: 503 + Retry-After while down, one run after", async () => {
    const { proxy, client } = await throughProxy({ retries: 1 });
    const { runs, count } = counted();
    const { wrapped } = endpoint(client, async (req, { eventId }) => (count(eventId), Response.json({ ok: eventId })));
    const ids = Array.from({ length: 10 }, () => uniq("down"));
    proxy.setMode("refuse");
    const down = await Promise.all(ids.map((id) => send(wrapped, delivery(id))));
    expect(down.map((a) => [a.status, Number(a.res?.headers.get("retry-after")) > 0])).toEqual(ids.map(() => [503, true]));
    expect(runs.size).toBe(0);
    proxy.setMode("forward");
    const healed = await Promise.all(ids.map((id) => deliverUntilAccepted(wrapped, id)));
    expect(healed.map((answers) => answers.at(-1)!.status)).toEqual(ids.map(() => 200));
    const again = await Promise.all(ids.map((id) => send(wrapped, delivery(id))));
    expect(again.map((a) => [a.status, a.replayed])).toEqual(ids.map(() => [200, true]));
    expect([...runs.values()]).toEqual(ids.map(() => 1));
  });

  it("the claim's answer lost once — 10 events: one run each (the retry's attemptId is answered as a repeat)", async () => {
    const ids = Array.from({ length: 10 }, () => uniq("lostclaim"));
    const claims: IdempotencyInfo["claim"][] = [];
    await Promise.all(
      ids.map(async (id) => {
        let claimCalls = 0;
        const { client } = await throughProxy({
          timeoutMs: 1000,
          fetch: (proxy) => (url, init) => {
            if (String(url).endsWith("/api/v1/claims") && ++claimCalls === 1) {
              proxy.blackholeAfter(id);
              // Its answer is lost, not the claim: it fails (times out) no sooner than the claim has committed.
              return fetch(url, init).catch(async (err: unknown) => {
                await expect.poll(() => sql("SELECT 1 FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, id])).toHaveLength(1);
                throw err;
              });
            }
            proxy.setMode("forward");
            return fetch(url, init);
          },
        });
        let runs = 0;
        const { wrapped } = endpoint(client, async (req, info) => (runs++, claims.push(info.claim), Response.json({ ok: id })));
        expect((await send(wrapped, delivery(id))).status).toBe(200);
        // One run; the retry (a second one if the first retry's answer was slower than 1 s) is the repeat.
        expect(runs).toBe(1);
        expect(claimCalls).toBeGreaterThanOrEqual(2);
      }),
    );
    expect(claims.every((c) => c.repeat === true && c.claimKind === "claimed")).toBe(true);
    const rows = await sql<{ duplicate_count: number; status: string }>(
      "SELECT duplicate_count, status FROM dedup_keys WHERE source = $1 AND event_id = ANY($2)",
      [source, ids],
    );
    expect(rows).toEqual(ids.map(() => ({ duplicate_count: 0, status: "done" })));
  });

  it("handler slower than the lease (still running after its claim's 3 s lease ended, redelivered then) — 5 events: one run; the redelivery waits (409), the next gets the saved response", async () => {
    const { client } = await throughProxy();
    const { runs, count } = counted();
    const ids = Array.from({ length: 5 }, () => uniq("slow"));
    const claimLeases: string[] = [];
    let allIn!: () => void;
    const inHandlers = new Promise<void>((r) => (allIn = r));
    let finish!: () => void;
    const redeliveredGate = new Promise<void>((r) => (finish = r));
    const { wrapped, errors } = endpoint(client, async (req, { eventId, signal, claim }) => {
      const n = count(eventId);
      if (claimLeases.push(claim.leaseExpiresAt!) === ids.length) allIn();
      await redeliveredGate; // still running when the redelivery, after its claim's lease ended, was answered
      expect(signal.aborted).toBe(false);
      return Response.json({ charged: eventId, run: n }, { status: 201, headers: { "x-charge": `ch_${eventId}` } });
    });
    const firsts = ids.map((id) => send(wrapped, delivery(id)));
    await inHandlers;
    // The sender redelivers once every claim's 3 s lease has ended by the database's clock: only the heartbeats hold the keys.
    await untilDatabaseClockPasses(latest(claimLeases));
    const redelivered = await Promise.all(ids.map((id) => send(wrapped, delivery(id))));
    expect(redelivered.map((a) => a.status)).toEqual(ids.map(() => 409));
    finish();
    const first = await Promise.all(firsts);
    expect(first.map((a) => [a.status, a.replayed])).toEqual(ids.map(() => [201, false]));
    const later = await Promise.all(ids.map((id) => send(wrapped, delivery(id))));
    for (const [i, a] of later.entries()) {
      expect([a.status, a.replayed, a.res?.headers.get("content-type")]).toEqual([201, true, "application/json"]);
      expect(a.bytes.equals(first[i].bytes)).toBe(true);
    }
    expect([...runs.values()]).toEqual(ids.map(() => 1));
    expect(errors).toEqual([]);
    // Extended past the 3 s lease by heartbeats, never taken over: one claim, one completion each.
    const kinds = await sql<{ kind: string; n: number }>(
      "SELECT kind, count(*)::int AS n FROM audit_events WHERE source = $1 AND event_id = ANY($2) GROUP BY kind ORDER BY kind",
      [source, ids],
    );
    expect(kinds).toEqual([
      { kind: "claimed", n: 5 },
      { kind: "completed", n: 5 },
    ]);
  });

  it("`complete` lost (Keyward down while the handler ran) — 5 events: retried until confirmed; the redelivery after the lease is a duplicate", async () => {
    const failedCompletes = new Set<string>();
    const leaseEnds: string[] = []; // every lease end Keyward confirmed to these runs: their claims' and extensions'
    const { proxy, client } = await throughProxy({
      retries: 0,
      fetch: () => async (url, init) => {
        const path = String(url);
        try {
          const res = await fetch(url, init);
          if (res.ok && /\/api\/v1\/claims(\/extend)?$/.test(path)) {
            const { leaseExpiresAt } = (await res.clone().json()) as { leaseExpiresAt?: string };
            if (leaseExpiresAt) leaseEnds.push(leaseExpiresAt);
          }
          return res;
        } catch (err) {
          if (path.endsWith("/complete")) failedCompletes.add((JSON.parse(String(init?.body)) as { eventId: string }).eventId);
          throw err;
        }
      },
    });
    const { runs, count } = counted();
    const ids = Array.from({ length: 5 }, () => uniq("lostcomplete"));
    let entered = 0;
    let allIn!: () => void;
    const inHandlers = new Promise<void>((r) => (allIn = r));
    let down!: () => void;
    const keywardDown = new Promise<void>((r) => (down = r));
    const { wrapped, errors } = endpoint(client, async (req, { eventId }) => {
      count(eventId);
      if (++entered === ids.length) allIn();
      await keywardDown; // returns while Keyward is down: its first completes fail
      return Response.json({ charged: eventId });
    });
    const firsts = ids.map((id) => send(wrapped, delivery(id)));
    await inHandlers;
    proxy.setMode("refuse");
    down();
    // Keyward comes back once every run's complete has failed at least once.
    await expect.poll(() => failedCompletes.size).toBe(ids.length);
    proxy.setMode("forward");
    const first = await Promise.all(firsts);
    expect(first.map((a) => a.status)).toEqual(ids.map(() => 200));
    expect((await keyStates(ids)).map((k) => [k.status, k.result_status])).toEqual(ids.map(() => ["done", 200]));
    expect(errors.filter(([, phase]) => phase === "complete")).toEqual([]); // confirmed, not given up
    // The sender redelivers once every lease these runs held has ended by the database's clock.
    expect(leaseEnds.length).toBeGreaterThanOrEqual(ids.length);
    await untilDatabaseClockPasses(latest(leaseEnds));
    const again = await Promise.all(ids.map((id) => send(wrapped, delivery(id))));
    for (const [i, a] of again.entries()) {
      expect([a.status, a.replayed]).toEqual([200, true]);
      expect(a.bytes.equals(first[i].bytes)).toBe(true);
    }
    expect([...runs.values()]).toEqual(ids.map(() => 1));
  });

  it("`complete`'s answer lost once: the retry is confirmed (a no-op), and nothing runs twice", async () => {
    const id = uniq("lostanswer");
    let completes = 0;
    let healed: Promise<void> | undefined;
    const { client } = await throughProxy({
      fetch: (proxy) => (url, init) => {
        if (String(url).endsWith("/complete") && ++completes === 1) {
          proxy.blackholeAfter(`"claimToken"`);
          // Only this request's answer is lost: the network heals once it has completed the key.
          healed = expect
            .poll(async () => (await keyStates([id])).map((k) => k.status))
            .toEqual(["done"])
            .then(() => proxy.setMode("forward"));
        }
        return fetch(url, init);
      },
    });
    let runs = 0;
    const { wrapped, errors } = endpoint(client, async () => (runs++, Response.json({ ok: id })));
    expect((await send(wrapped, delivery(id))).status).toBe(200);
    await healed;
    expect(completes).toBeGreaterThanOrEqual(2);
    expect(errors).toEqual([]);
    const dup = await send(wrapped, delivery(id));
    expect([dup.status, dup.replayed, runs]).toEqual([200, true, 1]);
    const audit = await sql<{ kind: string }>("SELECT kind FROM audit_events WHERE source = $1 AND event_id = $2 ORDER BY at, id", [source, id]);
    expect(audit.map((a) => a.kind)).toEqual(["claimed", "completed"]);
  });

  it("a lease taken over fires the handler's signal; the wrapper answers 503 lease_lost, never the handler's success", async () => {
    const { client } = await throughProxy();
    const [stops, ignores] = [uniq("takenover"), uniq("takenover")];
    const seen: Record<string, unknown> = {};
    let entered = 0;
    let bothIn!: () => void;
    const inHandlers = new Promise<void>((r) => (bothIn = r));
    const { wrapped } = endpoint(client, async (req, { eventId, signal }) => {
      if (++entered === 2) bothIn();
      const aborted = new Promise<void>((r) => signal.addEventListener("abort", () => r()));
      await aborted;
      seen[eventId] = signal.reason;
      if (eventId === stops) throw signal.reason; // a handler that honours its signal
      return Response.json({ charged: eventId }); // one that carries on regardless
    });
    const answers = [send(wrapped, delivery(stops)), send(wrapped, delivery(ignores))];
    await inHandlers;
    // Another delivery takes the leases over (as it would after a lapse).
    await sql("UPDATE dedup_keys SET lease_expires_at = now() - interval '1 second' WHERE source = $1 AND event_id = ANY($2)", [source, [stops, ignores]]);
    const direct = createKeywardClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: key });
    const takeovers = await Promise.all([stops, ignores].map((eventId) => direct.claim({ source, eventId, eventType: "payment", leaseSeconds: 60 })));
    expect(takeovers.map((t) => t.claimKind)).toEqual(["lease_takeover", "lease_takeover"]);
    const [a, b] = await Promise.all(answers);
    for (const r of [a, b]) {
      expect(r.status).toBe(503);
      expect(JSON.parse(r.bytes.toString()).error.code).toBe("lease_lost");
      expect(Number(r.res?.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect(seen[stops]).toBeInstanceOf(IdempotencyError);
    expect((seen[ignores] as IdempotencyError).code).toBe("lease_lost");
    // The takeover still holds the keys: the lost runs neither completed nor released them.
    expect((await keyStates([stops, ignores])).map((k) => k.status)).toEqual(["processing", "processing"]);
    for (const t of takeovers) await direct.complete({ source, eventId: t.eventId, claimToken: t.claimToken! });
  });

  it("Keyward down for longer than the lease: the signal fires (lease_unconfirmed); a complete nobody pre-empted still counts", async () => {
    const { proxy, client } = await throughProxy({ retries: 0 });
    const id = uniq("unconfirmed");
    let reason: unknown;
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    let heal!: () => void;
    const healed = new Promise<void>((r) => (heal = r));
    const { wrapped } = endpoint(client, async (req, { signal }) => {
      entered();
      await new Promise<void>((r) => signal.addEventListener("abort", () => r()));
      reason = signal.reason;
      await healed; // returns once Keyward is reachable again
      return Response.json({ charged: id });
    });
    const answer = send(wrapped, delivery(id));
    await inHandler;
    proxy.setMode("refuse");
    await expect.poll(() => reason, { timeout: 10_000 }).toBeInstanceOf(IdempotencyError);
    expect((reason as IdempotencyError).code).toBe("lease_unconfirmed");
    proxy.setMode("forward");
    heal();
    const r = await answer;
    expect(r.status).toBe(200);
    expect((await keyStates([id])).map((k) => k.status)).toEqual(["done"]);
  });

  it("a malformed JSON body is a 400 invalid_event (the handler does not run), never a 500", async () => {
    const { client } = await throughProxy();
    let runs = 0;
    const { wrapped } = endpoint(client, async () => (runs++, new Response("ran")));
    const r = await send(wrapped, delivery("", '{"id": "evt_1", '));
    expect(r.status).toBe(400);
    expect(JSON.parse(r.bytes.toString()).error.code).toBe("invalid_event");
    const noId = await send(wrapped, delivery("", JSON.stringify({ amount: 1 })));
    expect(noId.status).toBe(400);
    const { wrapped: hashing } = endpoint(client, async () => (runs++, new Response("ran")), { payloadHash: "json", eventId: (req) => req.headers.get("webhook-id")! });
    const withId = delivery("", "not json");
    withId.headers.set("webhook-id", uniq("h"));
    expect((await send(hashing, withId)).status).toBe(400);
    expect(runs).toBe(0);
  });

  it("an event id Keyward refuses is the sender's 400; a source name or lease it refuses is a 500 the sender retries", async () => {
    const { client } = await throughProxy();
    let runs = 0;
    const handler = async () => (runs++, new Response("ran"));
    const tooLong = await send(endpoint(client, handler).wrapped, delivery("e".repeat(300)));
    expect([tooLong.status, JSON.parse(tooLong.bytes.toString()).error.code]).toEqual([400, "invalid_event"]);
    for (const extra of [{ source: "Not A Source Name!" }, { leaseSeconds: 0.5 }]) {
      const r = await send(endpoint(client, handler, extra).wrapped, delivery(uniq("cfg")));
      expect(r.status, JSON.stringify(extra)).toBe(500);
    }
    expect(runs).toBe(0);
  });

  it("first claim without a payload hash, later ones with two different hashes: the first hash is kept, the other is a mismatch", async () => {
    const direct = createKeywardClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: key });
    const eventId = uniq("hash");
    expect((await direct.claim({ source, eventId, eventType: "t" })).outcome).toBe("claimed");
    expect((await direct.claim({ source, eventId, eventType: "t", payloadHash: "1".repeat(64) })).outcome).toBe("duplicate");
    expect((await direct.claim({ source, eventId, eventType: "t", payloadHash: "2".repeat(64) })).outcome).toBe("payload_mismatch");

    // Through the wrapper, hashing canonical JSON: the same event re-serialised is a duplicate; changed, a 409.
    const { client } = await throughProxy();
    const { wrapped } = endpoint(client, async () => Response.json({ ok: true }), { payloadHash: "json" });
    const id = uniq("hash");
    expect((await send(wrapped, delivery(id, JSON.stringify({ id, amount: 42 })))).status).toBe(200);
    expect((await send(wrapped, delivery(id, `{ "amount": 42.0, "id": "${id}" }`))).replayed).toBe(true);
    const changed = await send(wrapped, delivery(id, JSON.stringify({ id, amount: 43 })));
    expect([changed.status, JSON.parse(changed.bytes.toString()).error.code]).toEqual([409, "payload_mismatch"]);
  });
});

/** The server's Redis lookups so far, by result (hit, miss, …). */
async function redisLookups(): Promise<Record<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const out: Record<string, number> = {};
  for (const m of (await res.text()).matchAll(/^keyward_redis_lookups_total\{result="(\w+)"\} (\S+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

describe("with the Redis first line on", () => {
  it("duplicates of a key holding a saved result always carry it, while a key without one is answered from Redis", async () => {
    const direct = createKeywardClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: key });
    const plain = uniq("redis");
    await direct.claim({ source, eventId: plain, eventType: "t" });
    // The control: duplicates of a key without a result are answered from Redis once it is in use.
    const outcomes: string[] = [];
    const hits = await vi.waitFor(
      async () => {
        const before = (await redisLookups()).hit ?? 0;
        outcomes.push((await direct.claim({ source, eventId: plain, eventType: "t" })).outcome);
        const n = ((await redisLookups()).hit ?? 0) - before;
        if (n === 0) throw new Error("the duplicate was not answered from Redis yet");
        return n;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(outcomes).toEqual(outcomes.map(() => "duplicate"));
    expect(hits).toBe(1);

    const saved = uniq("redis");
    const c = await direct.claim({ source, eventId: saved, eventType: "t", leaseSeconds: 30 });
    await direct.complete({ source, eventId: saved, claimToken: c.claimToken!, result: { status: 202, body: "first" } });
    for (let i = 0; i < 30; i++) {
      const d = await direct.claim({ source, eventId: saved, eventType: "t" });
      expect(d.result).toEqual({ status: 202, headers: {}, bodyBase64: Buffer.from("first").toString("base64") });
    }

    // A key remembered without a payload hash: a claim bringing one goes to PostgreSQL, which keeps it.
    expect((await direct.claim({ source, eventId: plain, eventType: "t", payloadHash: "1".repeat(64) })).outcome).toBe("duplicate");
    expect((await direct.claim({ source, eventId: plain, eventType: "t", payloadHash: "2".repeat(64) })).outcome).toBe("payload_mismatch");
  });
});
