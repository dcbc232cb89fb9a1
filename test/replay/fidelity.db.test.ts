/**
 * Replay byte for byte (issue 13, points 1–4), end to end: dead letters go in through the real intake
 * routes as raw request bodies, a replay runs on the real executor, and test/setup/receiver.ts (claiming
 * through Keyward's real claim handlers, served here over HTTP by lib/server/fast-routes.ts) receives
 * them. For every delivery: the body's bytes equal the payload's bytes as sent to intake; the
 * standardwebhooks verifier accepts it, and so does an independent HMAC over the header and body bytes
 * as they arrived; the content type is the stored one; a non-plain event id arrives as a stable ASCII
 * `webhook-id` with the original in `keyward-event-id`, and the receiver processes it exactly once.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { POST as batchRoute } from "@/app/api/v1/dead-letters/batch/route";
import { cliPrincipal } from "@/lib/auth/principal";
import { startReplayWorker } from "@/lib/replay/executor";
import { webhookIdFor } from "@/lib/replay/deliver";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { makeSource, uniq } from "@/test/setup/db";
import { makeApiKey, post } from "@/test/setup/http";
import { startReceiver, type Delivery, type Receiver } from "@/test/setup/receiver";
import { readyForReplay } from "@/test/setup/replay";
import { startReplayRequest } from "@/lib/replay/schema";
import { parseInput } from "@/lib/http/validate";
import { useClaimApi } from "@/test/setup/claim-api";

const ACTOR = cliPrincipal();
const claimApi = useClaimApi();
const { receivers, workers } = claimApi;
let apiKey: string;

beforeAll(async () => {
  apiKey = (await makeApiKey(["claims:write", "deadletters:write"])).key;
});

type Letter = { eventId: string; bytes: Buffer; contentType: string; item: string };

/** A batch item's JSON text with the payload spliced in verbatim. */
const jsonLetter = (eventId: string, payloadText: string): Letter => ({
  eventId,
  bytes: Buffer.from(payloadText, "utf8"),
  contentType: "application/json",
  item: `{"source":"%SOURCE%","eventId":${JSON.stringify(eventId)},"eventType":"order.created","error":"timeout","payload":${payloadText}}`,
});
const rawLetter = (eventId: string, bytes: Buffer, contentType: string): Letter => ({
  eventId,
  bytes,
  contentType,
  item: JSON.stringify({ source: "%SOURCE%", eventId, eventType: "sms.received", error: "timeout", payloadBase64: bytes.toString("base64"), contentType }),
});

/** Stores the letters, replays them all, waits for the end; answers the deliveries by original event id. */
async function replayAll(letters: Letter[]): Promise<{ rx: Receiver; byEvent: Map<string, Delivery[]>; replayId: string }> {
  const source = await makeSource();
  const rx = await startReceiver({ keywardUrl: claimApi.url(), apiKey, source });
  receivers.push(rx);
  rx.setSecret(await readyForReplay(source, rx.url));
  const raw = `{"items":[\n${letters.map((l) => l.item.replace("%SOURCE%", source)).join(",\n")}\n]}`;
  const res = await post(batchRoute, null, { key: apiKey, raw });
  expect(res.status).toBe(200);
  expect(res.body.results.every((r: { id?: string }) => r.id)).toBe(true);

  const pf = await createPreflight({ source }, ACTOR);
  expect(pf.counts).toMatchObject({ never_processed: letters.length });
  const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 200 }), uniq("k"), ACTOR);
  workers.push(startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: (m) => console.error(`[worker] ${m}`), sources: () => [source] }));
  await expect.poll(async () => (await getReplay(replayId)).status, { timeout: 30_000, interval: 100 }).toBe("completed");
  const byEvent = new Map<string, Delivery[]>();
  for (const d of rx.deliveries) {
    const id = decodeURIComponent(d.headers["keyward-event-id"]?.toString("latin1") ?? "");
    byEvent.set(id, [...(byEvent.get(id) ?? []), d]);
  }
  return { rx, byEvent, replayId };
}

function expectExact(letters: Letter[], byEvent: Map<string, Delivery[]>, rx: Receiver) {
  for (const l of letters) {
    const got = byEvent.get(l.eventId) ?? [];
    expect(got, l.eventId).toHaveLength(1);
    const [d] = got;
    expect(d.body.equals(l.bytes), `${l.eventId}: ${d.body.toString("utf8").slice(0, 120)}`).toBe(true);
    expect(d.headers["content-type"].toString("latin1")).toBe(l.contentType);
    expect(d.verified, `${l.eventId}: standardwebhooks verify`).toBe(true);
    expect(d.handVerified, `${l.eventId}: HMAC over the bytes received`).toBe(true);
    expect(rx.timesProcessed(l.eventId), l.eventId).toBe(1);
  }
  expect(rx.snapshot().badSignatures).toBe(0);
}

describe("replay sends the payload exactly as received", () => {
  it("JSON: big integers, whitespace, \\/, 200.0, integer-like keys, non-ASCII text, BOM-free UTF-8, 18-digit integers", async () => {
    const letters = [
      jsonLetter(uniq("bigint"), '{"id":820982911946154508,"product_id":788032119674292922,"variant_ids":[39072856,808950810]}'),
      jsonLetter(uniq("ws"), '{\n  "order" : {\n\t"id" : 1 ,\r\n  "lines" : [ ]\n  }\n}'),
      jsonLetter(uniq("slash"), '{"url":"https:\\/\\/shop.example\\/admin\\/orders\\/1.json","html":"<\\/script>"}'),
      jsonLetter(uniq("float"), '{"total_price":200.0,"tax":1.50,"rate":1e2,"tiny":-0.0}'),
      jsonLetter(uniq("keys"), '{"b":1,"10":"ten","a":2,"2":"two","1":"one"}'),
      jsonLetter(uniq("utf8"), '{"customer":"Zoë Müller","city":"東京","note":"🎉 paid","escaped":"\\u00e9\\ud83c\\udf89"}'),
      jsonLetter(uniq("eighteen"), '[123456789012345678,-987654321098765432,100000000000000001]'),
    ];
    const { rx, byEvent } = await replayAll(letters);
    expectExact(letters, byEvent, rx);
    for (const l of letters) expect([...byEvent.get(l.eventId)![0].body.subarray(0, 3)]).not.toEqual([0xef, 0xbb, 0xbf]);
  });

  it("form-encoded and XML bodies go out with their content type and exactly their bytes", async () => {
    const letters = [
      rawLetter(uniq("slack"), Buffer.from("token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&text=caf%C3%A9+%E6%9D%B1&trigger_id=13345224609.738474920.8088930838d88f008e0"), "application/x-www-form-urlencoded"),
      rawLetter(uniq("twilio"), Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<Message><Body>Grüße aus Köln</Body><From>+15551234567</From></Message>'), "text/xml; charset=utf-8"),
      rawLetter(uniq("legacy"), Buffer.from("amount=820982911946154508&currency=EUR&memo=paid%20in%20full"), "application/x-www-form-urlencoded; charset=utf-8"),
    ];
    const { rx, byEvent } = await replayAll(letters);
    expectExact(letters, byEvent, rx);
  });
});

describe("event ids outside plain ASCII", () => {
  it("CJK, emoji, Latin-1, dots and spaces: a stable ASCII webhook-id, the original in keyward-event-id, signed as sent, processed once", async () => {
    const ids = [`事件_${uniq()}`, `🎉party_${uniq()}`, `évt_café_${uniq()}`, `order.created.${uniq()}`, `evt ${uniq()} with spaces`, `plain_${uniq()}`];
    const letters = ids.map((id) => jsonLetter(id, `{"id":${JSON.stringify(id)}}`));
    const { rx, byEvent } = await replayAll(letters);
    expectExact(letters, byEvent, rx);
    for (const id of ids) {
      const d = byEvent.get(id)![0];
      const webhookId = d.headers["webhook-id"].toString("latin1");
      expect(webhookId).toBe(webhookIdFor(id));
      expect(webhookId).toMatch(/^[A-Za-z0-9!#$%&'*+\-^_`|~]+$/);
      expect(webhookId.includes(".")).toBe(false);
      if (id.startsWith("plain_")) expect(webhookId).toBe(id);
      else expect(webhookId).toMatch(/^kw_[A-Za-z0-9_-]{22}$/);
      // The header bytes are ASCII: what the receiver reads is what was signed.
      expect([...d.headers["keyward-event-id"]].every((b) => b >= 0x21 && b <= 0x7e)).toBe(true);
    }
  });
});
