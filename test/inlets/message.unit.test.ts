/**
 * A RabbitMQ message → a dead letter, as pure functions: x-death parsing, the event id read from a
 * header, a property or a JSON path (and why it could not be), the identity that makes a redelivery a
 * repeat, and the AMQP URL helpers.
 */
import { describe, expect, it } from "vitest";
import { amqpUrlProblem, maskAmqpUrl, parseAmqpTarget } from "@/lib/amqp/url";
import { extractEventId, letterFromMessage, parseXDeath, type InletMessage } from "@/lib/inlets/message";
import { parseEventIdFrom, type EventIdFrom } from "@/lib/inlets/schema";
import { reconnectDelayMs } from "@/lib/inlets/consumer";

const from = (s: string): EventIdFrom => {
  const r = parseEventIdFrom(s);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

const DEATH_TIME = 1_796_280_980;
const xDeath = [
  {
    count: 3,
    reason: "rejected",
    queue: "orders.work",
    time: { "!": "timestamp", value: DEATH_TIME },
    exchange: "orders",
    "routing-keys": ["order.created", "cc.key"],
  },
  { count: 1, reason: "expired", queue: "orders.delay", time: { "!": "timestamp", value: DEATH_TIME - 60 }, exchange: "", "routing-keys": ["orders.delay"] },
];

function message(over: Partial<InletMessage["properties"]> = {}, body = '{"data":{"id":"evt_json","n":12345678901234567890,"k":42}}'): InletMessage {
  return {
    content: Buffer.from(body),
    fields: { exchange: "orders.dlx", routingKey: "order.created" },
    properties: { contentType: "application/json", messageId: "msg-1", headers: { "x-death": xDeath, "x-event-id": "evt_header" }, ...over },
  };
}

const inlet = { id: "00000000-0000-4000-8000-000000000001", source: "billing", queue: "orders.dlq" };

describe("x-death", () => {
  it("reads RabbitMQ's entries, newest first: count, reason, queue, exchange, routing keys, time", () => {
    expect(parseXDeath({ "x-death": xDeath })).toEqual([
      { count: 3, reason: "rejected", queue: "orders.work", exchange: "orders", routingKeys: ["order.created", "cc.key"], time: new Date(DEATH_TIME * 1000) },
      { count: 1, reason: "expired", queue: "orders.delay", exchange: "", routingKeys: ["orders.delay"], time: new Date((DEATH_TIME - 60) * 1000) },
    ]);
  });

  it("is empty when absent or not an array, and tolerates damaged entries", () => {
    expect(parseXDeath(undefined)).toEqual([]);
    expect(parseXDeath({ "x-death": "rejected" })).toEqual([]);
    expect(parseXDeath({ "x-death": [null, { reason: "expired", count: -1, time: "yesterday" }] })).toEqual([
      { count: 1, reason: "expired", queue: "", exchange: null, routingKeys: [], time: null },
    ]);
  });

  it("makes attempts, failedAt, queue, the error and the origin of the letter", () => {
    const l = letterFromMessage(message(), inlet, from("property:message_id"));
    expect(l).toMatchObject({
      source: "billing",
      inletId: inlet.id,
      eventId: "msg-1",
      attempts: 3,
      failedAt: new Date(DEATH_TIME * 1000).toISOString(),
      queue: "orders.work",
      error: "rejected in queue orders.work (dead-lettered 3 times)",
      originExchange: "orders",
      originRoutingKey: "order.created",
      contentType: "application/json",
      eventType: "order.created",
      unidentifiedReason: null,
    });
    expect(l.payload.equals(message().content)).toBe(true);
  });

  it("without x-death: attempts 0, the message timestamp, no origin, an error that says so", () => {
    const l = letterFromMessage(message({ headers: {}, timestamp: 1_700_000_000, type: "invoice.paid" }), inlet, from("property:message_id"));
    expect(l).toMatchObject({
      attempts: 0,
      failedAt: "2023-11-14T22:13:20.000Z",
      queue: "orders.dlq",
      originExchange: null,
      originRoutingKey: null,
      eventType: "invoice.paid",
    });
    expect(l.error).toMatch(/without an x-death header/);
  });
});

describe("the event id", () => {
  it("from a header, a property or a JSON path", () => {
    expect(extractEventId(message(), from("header:x-event-id"))).toEqual({ ok: true, eventId: "evt_header" });
    expect(extractEventId(message({ headers: { "x-event-id": 42 } }), from("header:x-event-id"))).toEqual({ ok: true, eventId: "42" });
    expect(extractEventId(message({ headers: { "x-event-id": Buffer.from("évt") } }), from("header:x-event-id"))).toEqual({ ok: true, eventId: "évt" });
    expect(extractEventId(message(), from("property:message_id"))).toEqual({ ok: true, eventId: "msg-1" });
    expect(extractEventId(message({ correlationId: "corr-9" }), from("property:correlation_id"))).toEqual({ ok: true, eventId: "corr-9" });
    expect(extractEventId(message(), from("json:data.id"))).toEqual({ ok: true, eventId: "evt_json" });
    expect(extractEventId(message(), from("json:$.data.id"))).toEqual({ ok: true, eventId: "evt_json" });
    expect(extractEventId(message(), from("json:data.k"))).toEqual({ ok: true, eventId: "42" });
    expect(extractEventId(message({}, '{"items":[{"id":"a"},{"id":"b"}]}'), from("json:items.1.id"))).toEqual({ ok: true, eventId: "b" });
  });

  it("names why it is missing or unusable", () => {
    const reason = (m: InletMessage, f: string) => {
      const r = extractEventId(m, from(f));
      expect(r.ok).toBe(false);
      return (r as { reason: string }).reason;
    };
    expect(reason(message({ messageId: undefined }), "property:message_id")).toBe("the message has no message_id property");
    expect(reason(message(), "header:x-missing")).toBe("the message has no x-missing header");
    expect(reason(message({ headers: { "x-event-id": { a: 1 } } }), "header:x-event-id")).toBe("header:x-event-id is object, not a string");
    expect(reason(message({}, "not json"), "json:data.id")).toBe("the body is not JSON, so json:data.id cannot be read");
    expect(reason(message(), "json:data.missing")).toBe("the JSON body has no data.missing");
    expect(reason(message(), "json:data.n")).toMatch(/not an exact integer below 2\^53/);
    expect(reason(message({ messageId: "   " }), "property:message_id")).toMatch(/not usable: must not be blank/);
    expect(reason(message({ messageId: "x".repeat(256) }), "property:message_id")).toMatch(/not usable: must be at most 255/);
  });

  it("a message without one becomes an unidentified letter with the reason, under a stable placeholder id", () => {
    const m = message({ messageId: undefined });
    const a = letterFromMessage(m, inlet, from("property:message_id"));
    expect(a.unidentifiedReason).toBe("the message has no message_id property");
    expect(a.eventId).toMatch(/^unidentified:[0-9a-f]{32}$/);
    expect(letterFromMessage(m, inlet, from("property:message_id")).eventId).toBe(a.eventId);
  });

  it("parses --event-id-from and refuses other forms", () => {
    expect(parseEventIdFrom("header:x-id")).toEqual({ ok: true, value: { kind: "header", name: "x-id" } });
    expect(parseEventIdFrom("json:a.0.b")).toEqual({ ok: true, value: { kind: "json", path: ["a", "0", "b"] } });
    for (const bad of ["message_id", "property:type", "json:a..b", "header:", "body:x"]) expect(parseEventIdFrom(bad).ok).toBe(false);
  });
});

describe("identity and content type", () => {
  it("is the same for a redelivery and differs for another message, another death or another source", () => {
    const f = from("property:message_id");
    const key = (m: InletMessage, i = inlet) => letterFromMessage(m, i, f).originKey;
    const base = key(message());
    expect(key({ ...message(), fields: { exchange: "orders.dlx", routingKey: "order.created", redelivered: true } })).toBe(base);
    expect(key(message({ messageId: "msg-2" }))).not.toBe(base);
    expect(key(message({}, '{"other":1}'))).not.toBe(base);
    expect(key(message({ headers: { "x-death": [{ ...xDeath[0], count: 4 }] } }))).not.toBe(base);
    expect(key(message(), { ...inlet, source: "other" })).not.toBe(base);
  });

  it("keeps a media type as sent, and says application/octet-stream when there is none or it is not one", () => {
    const f = from("property:message_id");
    expect(letterFromMessage(message({ contentType: "text/xml; charset=utf-8" }), inlet, f).contentType).toBe("text/xml; charset=utf-8");
    expect(letterFromMessage(message({ contentType: undefined }), inlet, f).contentType).toBe("application/octet-stream");
    expect(letterFromMessage(message({ contentType: "not a type" }), inlet, f).contentType).toBe("application/octet-stream");
  });
});

describe("AMQP URLs", () => {
  it("masks the password, splits Keyward's routing parameters off, and refuses what cannot be used", () => {
    expect(maskAmqpUrl("amqp://keyward:s3cr%2Ft@rabbit.internal:5672/prod")).toBe("amqp://keyward:***@rabbit.internal:5672/prod");
    expect(maskAmqpUrl("amqps://rabbit.internal/%2F")).toBe("amqps://rabbit.internal/%2F");
    expect(parseAmqpTarget("amqp://u:p@h:5672/v?exchange=ex&routingKey=rk&heartbeat=10")).toEqual({
      connectUrl: "amqp://u:p@h:5672/v?heartbeat=10",
      exchange: "ex",
      routingKey: "rk",
      vhost: "v",
      host: "h:5672",
    });
    expect(parseAmqpTarget("amqp://h").vhost).toBe("/");
    expect(parseAmqpTarget("amqp://h/%2F").vhost).toBe("/");
    expect(parseAmqpTarget("amqp://h?exchange=").exchange).toBe("");
    expect(amqpUrlProblem("amqp://u:p@h/v")).toBeNull();
    expect(amqpUrlProblem("https://h/")).toMatch(/amqp:\/\/ or amqps:\/\//);
    expect(amqpUrlProblem("amqp://u:***@h/v")).toMatch(/masked password/);
    expect(amqpUrlProblem("amqp://h/a/b")).toMatch(/one path segment/);
    expect(amqpUrlProblem("not a url")).toMatch(/must be a URL/);
  });

  it("a body over KEYWARD_MAX_PAYLOAD_BYTES is kept without its bytes, unidentified, with the reason; a BOM before JSON is read past", () => {
    const big = letterFromMessage(message(), inlet, from("json:data.id"), 16);
    expect(big.payload.length).toBe(0);
    expect(big.unidentifiedReason).toMatch(/^the body is \d+ bytes, over KEYWARD_MAX_PAYLOAD_BYTES \(16\): it was not stored$/);
    expect(big.eventId).toMatch(/^unidentified:/);
    const bom = message({}, '\ufeff{"data":{"id":"evt_bom"}}');
    expect(extractEventId(bom, from("json:$.data.id"))).toEqual({ ok: true, eventId: "evt_bom" });
  });

  it("reconnects after 0.5 s at least and 30 s at most", () => {
    expect(reconnectDelayMs(0, () => 0)).toBe(500);
    expect(reconnectDelayMs(1, () => 0.999)).toBeLessThan(2000);
    expect(reconnectDelayMs(50, () => 0.999)).toBeLessThan(30_000);
    expect(reconnectDelayMs(50, () => 0.999)).toBeGreaterThan(29_000);
  });
});
