/**
 * Every handler shape of keyward/client on its real framework, against a real `keyward start`: the
 * Express 5 middleware (keyward/client/express), the Fastify 5 plugin (keyward/client/fastify), Hono 4
 * with withIdempotency, the README's Next route handler called as Next calls it (a NextRequest over a body
 * stream, read by both `eventId` and the handler), and makeIdempotent around a real RabbitMQ consumer and a real
 * BullMQ worker (the README's patterns, retries by the queue included). For each: the first delivery
 * runs the handler (which sees its signal), a duplicate gets the first response byte for byte (status,
 * saved headers, body; marked Idempotent-Replayed) without running it, a handler that fails is released
 * and runs again on the next delivery, another payload for the same event id is a 409, and what the
 * framework itself refuses (malformed JSON) never reaches the claim.
 */
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import amqp from "amqplib";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { NextRequest } from "next/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Job, Queue, UnrecoverableError, Worker } from "bullmq";
import { createKeywardClient, IdempotencyError, isIdempotencyError, makeIdempotent, withIdempotency, type KeywardClient } from "@/lib/client";
import { idempotency, idempotencyOf } from "@/lib/client/express";
import { idempotencyOf as fastifyIdempotencyOf, keywardIdempotency } from "@/lib/client/fastify";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { stopServer, type Server } from "@/test/setup/server";
import { startTestServer } from "@/test/setup/auth";
import { AMQP_URL } from "@/test/setup/rabbitmq";
import { REDIS_URL } from "@/test/setup/bullmq";

const spawned: Server[] = [];
let client: KeywardClient;
let source: string;

beforeAll(async () => {
  const { baseUrl } = await startTestServer(spawned);
  client = createKeywardClient({ baseUrl, apiKey: (await makeApiKey(["claims:write"])).key, retryDelayMs: 20 });
  source = await makeSource();
  await sql("UPDATE sources SET save_results = true WHERE name = $1", [source]);
});

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

const common = () => ({ client, source, leaseSeconds: 5, saveResult: true, resultHeaders: ["content-type", "x-charge"], onError: () => {} });

/** What a sender sees of one HTTP delivery. */
type Seen = { status: number; body: Buffer; headers: Record<string, string> };

/** The assertions every HTTP adapter must pass, given a way to deliver a JSON body to its `/hooks` and `/fails` routes. */
async function behavesIdempotently(deliver: (path: string, body: string) => Promise<Seen>, runs: () => { hooks: number; fails: number; signals: boolean[] }) {
  const id = uniq("evt");
  const body = JSON.stringify({ id, amount: 5 });
  const first = await deliver("/hooks", body);
  expect(first.status).toBe(201);
  expect(first.headers["x-charge"]).toBe(`ch_${id}`);
  expect(first.headers["idempotent-replayed"]).toBeUndefined();
  const again = await deliver("/hooks", `{ "amount": 5, "id": "${id}" }`); // re-serialised: the same canonical JSON
  expect(again.status).toBe(201);
  expect(again.body.equals(first.body)).toBe(true);
  expect([again.headers["x-charge"], again.headers["content-type"], again.headers["idempotent-replayed"]]).toEqual([
    `ch_${id}`,
    first.headers["content-type"],
    "true",
  ]);
  expect(runs().hooks).toBe(1);
  expect(runs().signals).toEqual([false]);

  const changed = await deliver("/hooks", JSON.stringify({ id, amount: 6 }));
  expect([changed.status, JSON.parse(changed.body.toString()).error.code]).toEqual([409, "payload_mismatch"]);

  const failing = uniq("evt");
  const failed = await deliver("/fails", JSON.stringify({ id: failing }));
  expect(failed.status).toBe(500);
  expect((await client.state({ source, eventId: failing })).state).toBe("unknown"); // released
  const retried = await deliver("/fails", JSON.stringify({ id: failing }));
  expect(retried.status).toBe(200);
  expect(runs().fails).toBe(2);
  expect((await client.state({ source, eventId: failing })).status).toBe("done");

  const malformed = await deliver("/hooks", '{"id": ');
  expect(malformed.status).toBe(400);
  expect(runs().hooks).toBe(1);
}

describe("Express 5: idempotency() middleware", () => {
  it("runs once, replays the saved response, releases a failure, and leaves malformed JSON to express.json()", async () => {
    const counts = { hooks: 0, fails: 0, signals: [] as boolean[] };
    const app = express();
    const mw = idempotency({ ...common(), eventId: (req) => (req.body as { id?: string })?.id, payloadHash: "json" });
    app.post("/hooks", express.json(), mw, (req, res) => {
      counts.hooks++;
      counts.signals.push(idempotencyOf(req)!.signal.aborted);
      res.status(201).set("x-charge", `ch_${req.body.id}`).json({ id: req.body.id, nonce: randomUUID() });
    });
    app.post("/fails", express.json(), mw, async (req, res) => {
      if (++counts.fails === 1) throw new Error("downstream down"); // Express 5 hands it to its error handler: 500
      res.send("ok");
    });
    const server = app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      await behavesIdempotently(async (path, body) => {
        const res = await fetch(base + path, { method: "POST", headers: { "content-type": "application/json" }, body });
        return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: Object.fromEntries(res.headers) };
      }, () => counts);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe("Fastify 5: keywardIdempotency plugin", () => {
  it("runs once per event in the scope that registers it (and only there), replays the saved response, releases a failure", async () => {
    const counts = { hooks: 0, fails: 0, signals: [] as boolean[] };
    let outside = 0;
    const app = Fastify();
    await app.register(async (scope) => {
      await scope.register(keywardIdempotency, { ...common(), eventId: (req) => (req.body as { id?: string })?.id, payloadHash: "json" });
      scope.post("/hooks", async (req, reply) => {
        counts.hooks++;
        counts.signals.push(fastifyIdempotencyOf(req)!.signal.aborted);
        const { id } = req.body as { id: string };
        reply.code(201).header("x-charge", `ch_${id}`);
        return { id, nonce: randomUUID() };
      });
      scope.post("/fails", async () => {
        if (++counts.fails === 1) throw new Error("downstream down");
        return "ok";
      });
    });
    app.post("/outside", async (req) => (outside++, { id: (req.body as { id: string }).id }));
    await app.ready();
    try {
      await behavesIdempotently(async (url, payload) => {
        const res = await app.inject({ method: "POST", url, headers: { "content-type": "application/json" }, payload });
        return { status: res.statusCode, body: res.rawPayload, headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)])) };
      }, () => counts);
      // A route outside the plugin's scope is not claimed.
      const id = uniq("evt");
      for (let i = 0; i < 2; i++) await app.inject({ method: "POST", url: "/outside", payload: { id } });
      expect(outside).toBe(2);
      expect((await client.state({ source, eventId: id })).state).toBe("unknown");
    } finally {
      await app.close();
    }
  });
});

describe("Hono 4: withIdempotency on c.req.raw", () => {
  it("runs once, replays the saved response, releases a failure; a malformed body is withIdempotency's 400", async () => {
    const counts = { hooks: 0, fails: 0, signals: [] as boolean[] };
    const options = { ...common(), eventId: async (req: Request) => ((await req.json()) as { id: string }).id, payloadHash: "json" as const };
    const hooks = withIdempotency(async (req, info) => {
      counts.hooks++;
      counts.signals.push(info.signal.aborted);
      const { id } = (await req.json()) as { id: string };
      return Response.json({ id, nonce: randomUUID() }, { status: 201, headers: { "x-charge": `ch_${id}` } });
    }, options);
    const fails = withIdempotency(async () => {
      if (++counts.fails === 1) throw new Error("downstream down");
      return new Response("ok");
    }, options);
    const app = new Hono();
    app.post("/hooks", (c) => hooks(c.req.raw));
    app.post("/fails", (c) => fails(c.req.raw));
    app.onError((err, c) => c.text("failed", 500));
    await behavesIdempotently(async (path, body) => {
      const res = await app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: Object.fromEntries(res.headers) };
    }, () => counts);
  });
});

describe("Next (App Router): the README's route handler, called the way Next calls it", () => {
  /** README "A Next route handler" (app/api/webhooks/stripe/route.ts), with this file's source and client. */
  function stripeRoute(saveResult: boolean) {
    const fulfilled: unknown[] = [];
    const fulfilOrder = async (event: unknown, { signal }: { signal: AbortSignal }) => {
      expect(signal.aborted).toBe(false);
      fulfilled.push(event);
    };
    const keyward = client;
    const POST = withIdempotency(
      async (req, { eventId, signal }) => {
        const event = await req.json(); // the body is still unread here
        await fulfilOrder(event, { signal }); // throw (or answer 5xx) and the key is released
        return Response.json({ received: eventId }, { status: 201 });
      },
      {
        client: keyward,
        source,
        eventId: async (req) => (await req.json()).id, // or: (req) => req.headers.get("webhook-id")!
        eventType: "stripe.event",
        payloadHash: "json", // a redelivery with other content is a 409
        saveResult, // duplicates get this 201 and its body back
      },
    );
    return { POST, fulfilled };
  }

  /** Next's app-route module: `POST(request, { params })`, the request a NextRequest over the incoming body stream. */
  async function deliver(POST: (req: NextRequest, ctx: { params: Promise<Record<string, never>> }) => Promise<Response>, body: string) {
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode(body));
        c.close();
      },
    });
    const req = new NextRequest("http://localhost:3000/api/webhooks/stripe", { method: "POST", headers: { "content-type": "application/json" }, body: stream, duplex: "half" });
    const res = await POST(req, { params: Promise.resolve({}) });
    return { status: res.status, text: await res.text(), replayed: res.headers.get("idempotent-replayed") };
  }

  it("reads the event id from a clone, so the handler still reads the body: one run for two deliveries, the saved 201 answered to the second", async () => {
    const { POST, fulfilled } = stripeRoute(true);
    const id = uniq("evt");
    const first = await deliver(POST, JSON.stringify({ id, type: "charge.succeeded", amount: 5 }));
    expect(first).toEqual({ status: 201, text: JSON.stringify({ received: id }), replayed: null });
    const again = await deliver(POST, `{"amount":5,"type":"charge.succeeded","id":"${id}"}`);
    expect(again).toEqual({ status: 201, text: first.text, replayed: "true" });
    expect(fulfilled).toEqual([{ id, type: "charge.succeeded", amount: 5 }]);
    const other = await deliver(POST, JSON.stringify({ id, type: "charge.succeeded", amount: 6 }));
    expect(other.status).toBe(409);
    expect(fulfilled).toHaveLength(1);
  });

  it("without saved results the second delivery gets the neutral 200 {\"received\":true}", async () => {
    const { POST, fulfilled } = stripeRoute(false);
    const id = uniq("evt");
    expect((await deliver(POST, JSON.stringify({ id }))).status).toBe(201);
    expect(await deliver(POST, JSON.stringify({ id }))).toEqual({ status: 200, text: '{"received":true}', replayed: "true" });
    expect(fulfilled).toEqual([{ id }]);
  });
});

describe("makeIdempotent around a RabbitMQ consumer", () => {
  it("the same message delivered twice is processed once; the second call resolves to the first run's saved value", async () => {
    const conn = await amqp.connect(AMQP_URL);
    const ch = await conn.createChannel();
    const queue = uniq("kwt.orders");
    await ch.assertQueue(queue, { exclusive: true, autoDelete: true });
    try {
      const charged: string[] = [];
      type Order = { id: string; amount: number };
      const handle = makeIdempotent(
        async (order: Order, { signal }) => {
          expect(signal.aborted).toBe(false);
          charged.push(order.id);
          return { charge: `ch_${order.id}`, nonce: randomUUID() };
        },
        { ...common(), eventId: (order) => order.id, eventType: "order.paid", payload: (order) => order },
      );
      const answers: unknown[] = [];
      const failures: unknown[] = [];
      await ch.consume(queue, (msg) => {
        if (!msg) return;
        void handle(JSON.parse(msg.content.toString()) as Order).then(
          (v) => (answers.push(v), ch.ack(msg)),
          (err) => (failures.push(err), ch.ack(msg)),
        );
      }, { noAck: false });
      // One consumer takes them in turn (prefetch unlimited, so both may run at once: the second then waits or is a duplicate).
      const order = { id: uniq("ord"), amount: 12 };
      ch.sendToQueue(queue, Buffer.from(JSON.stringify(order)), { messageId: order.id });
      await expect.poll(() => answers.length, { timeout: 10_000 }).toBe(1);
      ch.sendToQueue(queue, Buffer.from(JSON.stringify({ amount: 12, id: order.id })), { messageId: order.id });
      await expect.poll(() => answers.length, { timeout: 10_000 }).toBe(2);
      expect(charged).toEqual([order.id]);
      expect(answers[1]).toEqual(answers[0]);
      expect(failures).toEqual([]);

      ch.sendToQueue(queue, Buffer.from(JSON.stringify({ id: order.id, amount: 13 })), { messageId: order.id });
      await expect.poll(() => failures.length, { timeout: 10_000 }).toBe(1);
      expect(failures[0]).toBeInstanceOf(IdempotencyError);
      expect(failures[0]).toMatchObject({ code: "payload_mismatch", retryable: false });
      expect(charged).toHaveLength(1);
    } finally {
      await ch.close();
      await conn.close();
    }
  });

  it("without saved results a duplicate resolves to onDuplicate's value; a failure releases the event for the next call", async () => {
    let calls = 0;
    const handle = makeIdempotent(
      async (id: string) => {
        if (++calls === 1) throw new Error("first try fails");
        return `done ${id}`;
      },
      { client, source, eventId: (id) => id, onDuplicate: ({ claim }) => `seen ${claim.eventId}` },
    );
    const id = uniq("job");
    await expect(handle(id)).rejects.toThrow("first try fails");
    expect(await handle(id)).toBe(`done ${id}`);
    expect(await handle(id)).toBe(`seen ${id}`);
    expect(calls).toBe(2);
  });
});

describe("makeIdempotent with a result that is not JSON", () => {
  it("completes the run without a result (reported), so the key is done and a duplicate gets onDuplicate's value", async () => {
    const errors: [unknown, string][] = [];
    let calls = 0;
    const handle = makeIdempotent(async () => (calls++, { amount: 10n }), {
      client,
      source,
      eventId: (id: string) => id,
      saveResult: true,
      leaseSeconds: 5,
      onError: (err, phase) => errors.push([err, phase]),
      onDuplicate: () => "seen",
    });
    const id = uniq("bigint");
    expect(await handle(id)).toEqual({ amount: 10n });
    expect(errors.map(([err, phase]) => [phase, (err as Error).name])).toEqual([["result", "TypeError"]]);
    const state = await client.state({ source, eventId: id });
    expect(state).toMatchObject({ status: "done" });
    expect(await handle(id)).toBe("seen");
    expect(calls).toBe(1);
  });
});

describe("makeIdempotent around a BullMQ worker", () => {
  it("a job BullMQ retries after a failed attempt runs again; the same event added as another job is processed once; another payload is not retried", async () => {
    const u = new URL(REDIS_URL);
    const connection = { host: u.hostname, port: Number(u.port || 6379), password: u.password || undefined, maxRetriesPerRequest: null };
    const name = uniq("kwq-orders");
    const queue = new Queue(name, { connection });
    type Order = { id: string; amount: number };
    const charged: string[] = [];
    let networkDown = true;
    const handle = makeIdempotent(
      async (order: Order, { signal }) => {
        expect(signal.aborted).toBe(false);
        if (networkDown) {
          networkDown = false;
          throw new Error("card network timeout"); // released: BullMQ's retry runs it again
        }
        charged.push(order.id);
        return { charge: `ch_${order.id}`, nonce: randomUUID() };
      },
      { ...common(), eventId: (order) => order.id, eventType: "order.paid", payload: (order) => order },
    );
    // The README's processor: a refusal that another attempt cannot change is not retried.
    const worker = new Worker<Order>(
      name,
      async (job) => {
        try {
          return await handle(job.data);
        } catch (err) {
          if (isIdempotencyError(err) && !err.retryable) throw new UnrecoverableError(`${err.code}: ${err.message}`);
          throw err; // in_flight, lease_lost, a handler error: BullMQ's backoff tries again
        }
      },
      { connection, concurrency: 4 },
    );
    worker.on("error", () => {});
    const settled = async (job: Job) => {
      let state = "";
      await expect
        .poll(async () => (state = await job.getState()), { timeout: 20_000, interval: 50 })
        .toMatch(/^(completed|failed)$/);
      return { state, job: (await Job.fromId(queue, job.id!))! };
    };
    try {
      const order = { id: uniq("ord"), amount: 12 };
      const retries = { attempts: 3, backoff: { type: "fixed", delay: 100 } };
      const first = await settled(await queue.add("order.paid", order, retries));
      expect(first.state).toBe("completed");
      expect(first.job.attemptsMade).toBe(2); // the failed attempt, then the one that charged
      expect(charged).toEqual([order.id]);

      // A producer that retried its add: another job, the same event. Not charged again; the first value.
      const again = await settled(await queue.add("order.paid", { amount: 12, id: order.id }, retries));
      expect(again.state).toBe("completed");
      expect(again.job.returnvalue).toEqual(first.job.returnvalue);
      expect(charged).toEqual([order.id]);

      const other = await settled(await queue.add("order.paid", { id: order.id, amount: 13 }, retries));
      expect(other.state).toBe("failed");
      expect(other.job.failedReason).toMatch(/^payload_mismatch: /);
      expect(other.job.attemptsMade).toBe(1); // unrecoverable: not retried
      expect(charged).toEqual([order.id]);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true }).catch(() => {});
      await queue.close();
    }
  });
});
