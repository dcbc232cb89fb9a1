/**
 * The AMQP replay target against the real RabbitMQ: a replay of letters that came through an inlet is
 * published back to their original exchange and routing key with the exact payload bytes, the content
 * type and the Standard Webhooks headers (the signature verifies over those bytes); a destination's
 * ?exchange=&routingKey= overrides; the URL's password is stored encrypted and shown masked; an
 * unroutable publish (returned), a nack and an unknown exchange are failed attempts, retried and then
 * failed like an HTTP failure; a letter with no origin and no exchange in the URL fails at once.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import type { Channel, GetMessage } from "amqplib";
import { cliPrincipal } from "@/lib/auth/principal";
import { recordInletLetters } from "@/lib/deadletters/intake";
import { parseInput } from "@/lib/http/validate";
import { startReplayRequest } from "@/lib/replay/schema";
import { updateSourceRequest } from "@/lib/sources/schema";
import { createInletRequest } from "@/lib/inlets/schema";
import { createInlet } from "@/lib/inlets/inlets";
import { letterFromMessage } from "@/lib/inlets/message";
import { parseEventIdFrom } from "@/lib/inlets/schema";
import { closeAmqpConnections, deliverAmqp, replayHeaders } from "@/lib/replay/amqp-publish";
import { startReplayWorker, type ReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { listAttempts } from "@/lib/replay/attempt-list";
import { listAttemptsQuery } from "@/lib/replay/schema";
import { replayTarget } from "@/lib/sources/signing-secret";
import { getSource, listSources, updateSource } from "@/lib/sources/sources";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";
import { AMQP_URL, eventually, makeTopology, type Topology } from "@/test/setup/rabbitmq";

const ACTOR = cliPrincipal();
const topologies: Topology[] = [];
const workers: ReplayWorker[] = [];
const PASSWORD = new URL(AMQP_URL).password;

afterEach(async () => {
  for (const w of workers.splice(0)) await w.stop();
});
afterAll(async () => {
  for (const t of topologies) await t.cleanup();
  await closeAmqpConnections();
});

/** A worker driving only `source`'s replays (other files' workers run beside this file's on one database). */
function worker(source: string): ReplayWorker {
  const w = startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: (m) => console.error(`[worker] ${m}`), sources: () => [source] });
  workers.push(w);
  return w;
}

async function topology(): Promise<Topology> {
  const t = await makeTopology();
  topologies.push(t);
  return t;
}

/** Dead letters made by the inlet mapping of messages RabbitMQ dead-lettered from `work` into `dlq`. */
async function lettersThroughInlet(t: Topology, source: string, messages: { key: string; body: Buffer; id: string; type: string }[]) {
  const inlet = await createInlet(source, parseInput(createInletRequest, { amqpUrl: AMQP_URL, queue: t.dlq, eventIdFrom: "header:x-event-id" }), ACTOR);
  for (const m of messages) t.publish(m.key, m.body, { contentType: m.type, headers: { "x-event-id": m.id } });
  await t.waitForDepth(t.work, messages.length);
  await t.rejectAll();
  await t.waitForDepth(t.dlq, messages.length);
  const from = parseEventIdFrom(inlet.eventIdFrom);
  if (!from.ok) throw new Error(from.error);
  for (let i = 0; i < messages.length; i++) {
    const m = await t.ch.get(t.dlq, { noAck: false });
    if (!m) throw new Error("missing message");
    await recordInletLetters([letterFromMessage(m, inlet, from.value)], "test");
    t.ch.ack(m);
  }
}

async function replayAll(source: string): Promise<string> {
  const pf = await createPreflight({ source }, ACTOR);
  const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 100 }), uniq("k"), ACTOR);
  worker(source);
  await eventually(async () => ((await getReplay(replayId)).status === "completed" ? true : undefined), "the replay to complete", 60_000);
  return replayId;
}

async function drain(ch: Channel, queue: string, n: number): Promise<GetMessage[]> {
  const out: GetMessage[] = [];
  while (out.length < n) {
    const m: GetMessage = await eventually(async () => (await ch.get(queue, { noAck: true })) || undefined, `message ${out.length + 1} in ${queue}`);
    out.push(m);
  }
  return out;
}

describe("the AMQP replay target", () => {
  it("publishes each letter back to its original exchange and routing key: exact bytes, content type, signed Standard Webhooks headers", async () => {
    const t = await topology();
    const source = await makeSource();
    const xml = Buffer.from('<order id="1">\u00e9</order>', "latin1"); // not UTF-8
    const json = Buffer.from('{"amount": 200.0, "id": 820982911946154508}');
    await lettersThroughInlet(t, source, [
      { key: "order.created", body: json, id: "evt_a", type: "application/json" },
      { key: "order.paid", body: xml, id: "evt.b/ü", type: "text/xml; charset=latin1" },
    ]);
    const secret = await readyForReplay(source, `${AMQP_URL}/`);
    // Stored encrypted, shown masked.
    expect((await getSource(source)).replayDestination).toBe(AMQP_URL.replace(`:${PASSWORD}@`, ":***@") + "/");
    expect(JSON.stringify((await listSources()).find((s) => s.name === source))).not.toContain(`:${PASSWORD}@`);
    const [row] = await sql<{ replay_destination: string; replay_destination_enc: string }>(
      "SELECT replay_destination, replay_destination_enc FROM sources WHERE name = $1",
      [source],
    );
    expect(row.replay_destination).not.toContain(`:${PASSWORD}@`);
    expect(row.replay_destination_enc).toMatch(/^v1:/);
    expect((await replayTarget(source)).brokerUrl).toBe(`${AMQP_URL}/`);

    const replayId = await replayAll(source);
    const r = await getReplay(replayId);
    expect(r.counts).toMatchObject({ delivered: 2, failed: 0 });
    expect(r.destination).toContain(":***@");
    // The bound queue of the original exchange got them again.
    const got = await drain(t.ch, t.work, 2);
    const byKey = new Map(got.map((m) => [m.fields.routingKey, m]));
    expect([...byKey.keys()].sort()).toEqual(["order.created", "order.paid"]);
    const a = byKey.get("order.created")!;
    const b = byKey.get("order.paid")!;
    expect(a.fields.exchange).toBe(t.orders);
    expect(a.content.equals(json)).toBe(true);
    expect(b.content.equals(xml)).toBe(true);
    expect(a.properties.contentType).toBe("application/json");
    expect(b.properties.contentType).toBe("text/xml; charset=latin1");
    expect(a.properties.deliveryMode).toBe(2);
    const headers = (m: typeof a) => Object.fromEntries(Object.entries(m.properties.headers ?? {}).map(([k, v]) => [k, String(v)]));
    expect(headers(a)).toMatchObject({ "webhook-id": "evt_a", "keyward-event-id": "evt_a", "keyward-replay-id": replayId });
    expect(headers(b)["keyward-event-id"]).toBe(encodeURIComponent("evt.b/ü"));
    expect(headers(b)["webhook-id"]).toMatch(/^kw_/);
    expect(a.properties.messageId).toBe("evt_a");
    // The signature covers exactly the bytes published (standardwebhooks verifies a string: the UTF-8 one here).
    expect(() => new Webhook(secret).verify(a.content.toString("utf8"), headers(a))).not.toThrow();
    expect(() => new Webhook(secret).verify('{"amount": 200, "id": 820982911946154508}', headers(a))).toThrow();
    const letters = await sql<{ status: string }>("SELECT status FROM dead_letters WHERE source = $1", [source]);
    expect(letters.map((l) => l.status)).toEqual(["delivered", "delivered"]);
    const audit = await sql<{ detail: { outcome: string } }>("SELECT detail FROM audit_events WHERE source = $1 AND kind = 'replayed'", [source]);
    expect(audit.map((x) => x.detail.outcome)).toEqual(["delivered", "delivered"]);
    // What the broker answered is each attempt's evidence, as an HTTP answer's headers and body are (the dead-letter page shows them).
    const ids = await sql<{ id: string; event_id: string }>("SELECT id, event_id FROM dead_letters WHERE source = $1", [source]);
    const paid = ids.find((l) => l.event_id === "evt.b/ü")!;
    const [attempt] = (await listAttempts(paid.id, parseInput(listAttemptsQuery, {}))).items;
    expect(attempt.responseHeaders).toEqual([
      ["amqp-confirm", "ack"],
      ["amqp-exchange", t.orders],
      ["amqp-routing-key", "order.paid"],
      ["amqp-message-id", headers(b)["webhook-id"]],
    ]);
    expect(attempt.responseBody).toBe(`basic.ack: the broker confirmed the publish to exchange "${t.orders}" with routing key "order.paid"`);
  });

  it("publishes to the destination's own exchange and routing key when it names them", async () => {
    const t = await topology();
    const source = await makeSource();
    await seedDeadLetters(source, ["evt_http_1"]); // through the HTTP intake: no AMQP origin
    await readyForReplay(source, `${AMQP_URL}/?exchange=${encodeURIComponent(t.dlx)}&routingKey=replays`);
    await replayAll(source);
    const [m] = await drain(t.ch, t.dlq, 1);
    expect(m.fields).toMatchObject({ exchange: t.dlx, routingKey: "replays" });
    expect(JSON.parse(m.content.toString())).toEqual({ id: "evt_http_1", n: 0 });
  });

  it("an unroutable publish is a failed attempt, retried and then failed like an HTTP failure", async () => {
    const t = await topology();
    const source = await makeSource();
    const lonely = `${t.orders}.lonely`;
    await t.ch.assertExchange(lonely, "direct", { durable: false, autoDelete: false });
    try {
      await seedDeadLetters(source, ["evt_unroutable"]);
      await readyForReplay(source, `${AMQP_URL}/?exchange=${encodeURIComponent(lonely)}&routingKey=nobody`);
      const replayId = await replayAll(source);
      const r = await getReplay(replayId);
      expect(r.counts).toMatchObject({ delivered: 0, failed: 1 });
      expect(r.failures).toEqual([expect.objectContaining({ eventId: "evt_unroutable", outcome: "failed", attempts: 5 })]);
      expect(r.failures[0].lastError).toMatch(/^unroutable: the broker returned it \(312 NO_ROUTE\)/);
      const [letter] = await sql<{ status: string; last_replay_error: string }>("SELECT status, last_replay_error FROM dead_letters WHERE source = $1", [source]);
      expect(letter.status).toBe("pending");
      expect(letter.last_replay_error).toMatch(/unroutable/);
      // Each attempt keeps the broker's answer: the message returned (312 NO_ROUTE), then confirmed.
      const [{ id }] = await sql<{ id: string }>("SELECT id FROM dead_letters WHERE source = $1", [source]);
      const attempts = (await listAttempts(id, parseInput(listAttemptsQuery, {}))).items;
      expect(attempts).toHaveLength(5);
      for (const a of attempts) {
        expect(a.responseHeaders).toEqual(expect.arrayContaining([["amqp-confirm", "ack"], ["amqp-return", "312 NO_ROUTE"], ["amqp-exchange", lonely]]));
        expect(a.responseBody).toMatch(/^basic\.return 312 NO_ROUTE/);
      }
    } finally {
      await t.ch.deleteExchange(lonely);
    }
  }, 90_000);
});

describe("deliverAmqp", () => {
  const headers = () => replayHeaders({ id: "evt_1", body: "{}", secret: "whsec_" + Buffer.alloc(32, 1).toString("base64"), replayId: "r1" });
  const item = { exchange: null, routingKey: null, contentType: "application/json" };

  it("fails a nacked publish (a full queue rejecting publishes) and an unknown exchange, both retryable", async () => {
    const t = await topology();
    const full = `${t.work}.full`;
    await t.ch.assertQueue(full, { durable: false, arguments: { "x-max-length": 0, "x-overflow": "reject-publish" } });
    try {
      const nacked = await deliverAmqp({ ...item, exchange: "", routingKey: full }, AMQP_URL, headers(), Buffer.from("{}"));
      expect(nacked).toMatchObject({ ok: false, status: null, error: "nacked by the broker", retryable: true });
      // The nack is the attempt's evidence.
      expect(nacked.answer).toEqual({
        fields: [["amqp-confirm", "nack"], ["amqp-exchange", ""], ["amqp-routing-key", full], ["amqp-message-id", "evt_1"]],
        sentence: "basic.nack: nacked by the broker",
      });
    } finally {
      await t.ch.deleteQueue(full);
    }
    const unknown = await deliverAmqp({ ...item, exchange: `${t.orders}.missing`, routingKey: "x" }, AMQP_URL, headers(), Buffer.from("{}"));
    expect(unknown.ok).toBe(false);
    expect(unknown.retryable).toBe(true);
    expect(unknown.error).toMatch(/NOT_FOUND - no exchange/);
    // The connection survived the channel the broker closed.
    const fine = await deliverAmqp({ ...item, exchange: "", routingKey: t.work }, AMQP_URL, headers(), Buffer.from("{}"));
    expect(fine).toMatchObject({ ok: true, status: null, error: null, retryable: false });
    expect(fine.answer?.fields[0]).toEqual(["amqp-confirm", "ack"]);
    await t.waitForDepth(t.work, 1);
  });

  it("without an origin or an exchange in the URL, fails at once (not retryable); a refused login is named without the password", async () => {
    const none = await deliverAmqp(item, AMQP_URL, headers(), Buffer.from("{}"));
    expect(none).toMatchObject({ ok: false, retryable: false, error: expect.stringMatching(/^no exchange to publish to/) });
    const wrong = new URL(AMQP_URL);
    wrong.password = "wrong-password-xyz";
    const refused = await deliverAmqp({ ...item, exchange: "", routingKey: "q" }, wrong.toString(), headers(), Buffer.from("{}"));
    expect(refused).toMatchObject({ ok: false, retryable: true, error: expect.stringMatching(/login refused/) });
    expect(refused.error).not.toContain("wrong-password-xyz");
  });

  it("refuses to store a destination whose password is the mask, or an AMQP URL it cannot use", async () => {
    const source = await makeSource();
    for (const bad of ["amqp://guest:***@127.0.0.1/", "amqp://127.0.0.1/a/b", "amqps://"]) {
      // Refused where every caller parses (the route, the CLI): the request schema.
      expect(() => parseInput(updateSourceRequest, { replayDestination: bad }), bad).toThrow(expect.objectContaining({ status: 422 }));
    }
    await updateSource(source, { replayDestination: "amqp://127.0.0.1:5672/%2F?exchange=x" }, ACTOR);
    expect((await getSource(source)).replayDestination).toBe("amqp://127.0.0.1:5672/%2F?exchange=x");
    await updateSource(source, { replayDestination: "https://example.test/hook" }, ACTOR);
    const [row] = await sql<{ replay_destination_enc: string | null }>("SELECT replay_destination_enc FROM sources WHERE name = $1", [source]);
    expect(row.replay_destination_enc).toBeNull();
  });
});
