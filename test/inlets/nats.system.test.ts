/**
 * The NATS JetStream inlet against the machine's nats-server -js: a message a consumer gave up on (its
 * MAX_DELIVERIES advisory, kept in the inlet's advisory stream) becomes a dead letter with its data byte
 * for byte, its headers, Nats-Msg-Id as the event id, the deliveries as attempts; one without a
 * Nats-Msg-Id is kept as unidentified; the advisory is acknowledged once the letter committed (the work
 * queue is empty then), and one stored but not acknowledged (a crash between commit and ack) is stored
 * once; a message over KEYWARD_MAX_PAYLOAD_BYTES is kept without its body, unidentified with the reason,
 * its advisory acknowledged once; a replay publishes the bytes back with Nats-Msg-Id set from the dead
 * letter, so JetStream drops a retried publish (and not the replay itself, though the original's own
 * Nats-Msg-Id is still in the window).
 */
import { jetstream, type JsMsg } from "@nats-io/jetstream";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cliPrincipal } from "@/lib/auth/principal";
import { recordInletLetters } from "@/lib/deadletters/intake";
import { getDeadLetter } from "@/lib/deadletters/list";
import { parseInput } from "@/lib/http/validate";
import { startInletConsumers, type InletConsumers } from "@/lib/inlets/consumers";
import { createInlet, listInlets, loadInletConfigs } from "@/lib/inlets/inlets";
import { ADVISORY_CONSUMER, letterFromNats, type MaxDeliveriesAdvisory } from "@/lib/inlets/kinds/nats";
import { createInletRequest, parseEventIdFrom } from "@/lib/inlets/schema";
import { startReplayRequest } from "@/lib/replay/schema";
import { startReplayWorker } from "@/lib/replay/executor";
import { createPreflight } from "@/lib/replay/preflight";
import { getReplay, startReplay } from "@/lib/replay/replays";
import { listAttempts } from "@/lib/replay/attempt-list";
import { listAttemptsQuery } from "@/lib/replay/schema";
import { closeNatsConnections, replayMsgId, sendNats } from "@/lib/replay/nats-publish";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeNatsTopology, NATS_URL, type NatsTopology } from "@/test/setup/nats";
import { eventually } from "@/test/setup/rabbitmq";
import { readyForReplay } from "@/test/setup/replay";
import { reportsAgain } from "@/test/setup/inlets";
import { timePasses } from "@/test/setup/time";

const ADMIN = cliPrincipal();
const topologies: { t: NatsTopology; extra: string[] }[] = [];
const consumers: InletConsumers[] = [];

afterEach(async () => {
  for (const c of consumers.splice(0)) await c.stop();
});
afterAll(async () => {
  for (const { t, extra } of topologies) await t.cleanup(extra);
  await closeNatsConnections();
});

async function setup() {
  const t = await makeNatsTopology();
  const source = await makeSource();
  const inlet = await createInlet(source, parseInput(createInletRequest, { kind: "nats", natsUrl: NATS_URL, stream: t.stream, consumer: t.consumer, prefetch: 5 }), ADMIN);
  topologies.push({ t, extra: [inlet.settings.advisoryStream!] });
  return { t, source, inlet };
}

function consume(inletId: string): InletConsumers {
  const c = startInletConsumers({ only: [inletId], pollMs: 100, log: () => {} });
  consumers.push(c);
  return c;
}

type Row = { id: string; event_id: string; event_type: string; payload: Buffer; content_type: string; error: string; attempts: number; status: string; origin: Record<string, unknown> };
const letters = (source: string) =>
  sql<Row>("SELECT id, event_id, event_type, payload, content_type, error, attempts, status, origin FROM dead_letters WHERE source = $1 ORDER BY event_id", [source]);
const stored = (source: string, n: number) =>
  eventually(async () => {
    const rows = await letters(source);
    return rows.length >= n ? rows : undefined;
  }, `${n} dead letters of ${source}`);

describe("NATS JetStream inlet", () => {
  it("takes each message that exhausted its deliveries: bytes, headers, Nats-Msg-Id, deliveries; acks the advisory after the commit", async () => {
    const { t, source, inlet } = await setup();
    expect(inlet).toMatchObject({ kind: "nats", queue: `${t.stream}/${t.consumer}`, eventIdFrom: "header:Nats-Msg-Id" });
    const bytes = Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x20, 0x31, 0x2e, 0x30, 0x7d, 0xff, 0x00]);
    await t.publish(bytes, { id: "evt_a", headers: { "Content-Type": "application/x-custom; v=2", "X-Trace": "t1" } });
    await t.publish('{"n":2}', { id: "evt_b", headers: { "Content-Type": "application/json" } });
    await t.publish("no id");
    consume(inlet.id);
    await eventually(async () => ((await listInlets(source))[0].state === "consuming" ? true : undefined), "the consumer to start");
    await t.failAll(3);
    const rows = await stored(source, 3);
    const a = rows.find((r) => r.event_id === "evt_a")!;
    expect(a.payload.equals(bytes)).toBe(true);
    expect(a).toMatchObject({ content_type: "application/x-custom; v=2", event_type: t.subject, attempts: 2, status: "pending" });
    expect(a.error).toBe(`exhausted 2 deliveries to consumer ${t.consumer} of stream ${t.stream}`);
    expect(a.origin).toMatchObject({ kind: "nats", stream: t.stream, consumer: t.consumer, subject: t.subject, deliveries: 2 });
    expect(a.origin.headers).toEqual(expect.arrayContaining([["X-Trace", "t1"], ["Nats-Msg-Id", "evt_a"]]));
    const u = rows.find((r) => r.status === "unidentified")!;
    expect(u.payload.toString()).toBe("no id");
    expect((await getDeadLetter(u.id)).unidentifiedReason).toBe("the message has no Nats-Msg-Id header");
    // Every advisory acknowledged (the work queue removed them), nothing waiting.
    await eventually(async () => ((await t.jsm.streams.info(inlet.settings.advisoryStream!)).state.messages === 0 ? true : undefined), "the advisories to be acknowledged");
    await eventually(async () => {
      const [i] = await listInlets(source);
      return i.consumed === 3 && i.lag.messages === 0 ? true : undefined;
    }, "the lag report");
  });

  it("stores once an advisory stored but not acknowledged (a crash between commit and ack), then acks it", async () => {
    const { t, source, inlet } = await setup();
    await t.publish('{"x":1}', { id: "evt_once" });
    await t.failAll(1);
    const js = jetstream(t.nc);
    const c = await js.consumers.get(inlet.settings.advisoryStream!, ADVISORY_CONSUMER);
    const m = (await c.next({ expires: 5000 })) as JsMsg;
    expect(m).not.toBeNull();
    const advisory = m.json<MaxDeliveriesAdvisory>();
    const original = await t.jsm.streams.getMessage(t.stream, { seq: advisory.stream_seq });
    const [config] = await loadInletConfigs([inlet.id]);
    const from = parseEventIdFrom(config.eventIdFrom, "nats");
    if (!from.ok) throw new Error(from.error);
    const letter = letterFromNats(advisory, { subject: original!.subject, seq: original!.seq, data: original!.data, headers: [["Nats-Msg-Id", "evt_once"]], time: original!.time }, config, from.value);
    expect(await recordInletLetters([letter], "test")).toEqual([expect.any(String)]);
    m.nak(); // the crash: not acknowledged, delivered again
    consume(inlet.id);
    await eventually(async () => ((await t.jsm.streams.info(inlet.settings.advisoryStream!)).state.messages === 0 ? true : undefined), "the advisory acknowledged");
    expect((await letters(source)).map((r) => r.event_id)).toEqual(["evt_once"]);
  });

  it("keeps an exhausted message over KEYWARD_MAX_PAYLOAD_BYTES without its body, unidentified with the reason; acks its advisory once", async () => {
    const { t, source, inlet } = await setup();
    const big = Buffer.alloc(2000, "x");
    await t.publish(big, { id: "evt_big", headers: { "Content-Type": "text/plain" } });
    await t.publish('{"n":1}', { id: "evt_small" });
    const saved = process.env.KEYWARD_MAX_PAYLOAD_BYTES;
    process.env.KEYWARD_MAX_PAYLOAD_BYTES = "1024"; // read by the consumer when it connects
    try {
      consume(inlet.id);
      await eventually(async () => ((await listInlets(source))[0].state === "consuming" ? true : undefined), "the consumer to start");
      await t.failAll(2);
      const rows = await stored(source, 2);
      const b = rows.find((r) => r.status === "unidentified")!;
      expect(b.payload.length).toBe(0);
      expect(b.event_id).toMatch(/^unidentified:[0-9a-f]{32}$/); // not evt_big: nothing of the body was read
      expect(b).toMatchObject({ event_type: t.subject, attempts: 2, content_type: "text/plain" });
      expect(b.error).toBe(`exhausted 2 deliveries to consumer ${t.consumer} of stream ${t.stream}`);
      expect((await getDeadLetter(b.id)).unidentifiedReason).toBe("the message is 2000 bytes, over KEYWARD_MAX_PAYLOAD_BYTES (1024): it was not stored");
      // The limit is the body's: the small message is stored whole.
      expect(rows.find((r) => r.event_id === "evt_small")!.payload.toString()).toBe('{"n":1}');
      // Taken once: both advisories acknowledged (the work queue is empty), nothing delivered again.
      await eventually(async () => ((await t.jsm.streams.info(inlet.settings.advisoryStream!)).state.messages === 0 ? true : undefined), "the advisories to be acknowledged");
      await eventually(async () => {
        const [i] = await listInlets(source);
        return i.consumed === 2 && i.lag.messages === 0 ? true : undefined;
      }, "the lag report");
      await timePasses(500, "five of the consumer's lag reports (pollMs 100): an advisory delivered or stored again would show in them");
      await reportsAgain(inlet.id);
      expect((await letters(source)).length).toBe(2);
      expect((await t.jsm.streams.info(inlet.settings.advisoryStream!)).state.messages).toBe(0);
    } finally {
      if (saved === undefined) delete process.env.KEYWARD_MAX_PAYLOAD_BYTES;
      else process.env.KEYWARD_MAX_PAYLOAD_BYTES = saved;
    }
  });

  it("replays to a subject with Nats-Msg-Id set: the bytes and a verifiable signature; a retried publish is dropped by JetStream", async () => {
    const { t, source, inlet } = await setup();
    await t.publish('{"id":"evt_r","total":200.0}', { id: "evt_r", headers: { "Content-Type": "application/json" } });
    consume(inlet.id);
    await eventually(async () => ((await listInlets(source))[0].state === "consuming" ? true : undefined), "the consumer to start");
    await t.failAll(1);
    const [letter] = await stored(source, 1);
    await consumers.pop()!.stop();
    const replaySubject = t.subject.replace(/created$/, "replayed");
    const secret = await readyForReplay(source, `${NATS_URL}?subject=${replaySubject}`);
    const pf = await createPreflight({ source }, ADMIN);
    const { replayId } = await startReplay(parseInput(startReplayRequest, { preflightId: pf.preflightId, include: ["never_processed"], ratePerSecond: 100 }), uniq("k"), ADMIN);
    const w = startReplayWorker({ pollMs: 50, leaseSeconds: 5, timeoutMs: 5000, log: () => {}, sources: () => [source] });
    try {
      await eventually(async () => ((await getReplay(replayId)).status === "completed" ? true : undefined), "the replay to complete");
    } finally {
      await w.stop();
    }
    expect((await getReplay(replayId)).counts.delivered).toBe(1);
    const got = await t.jsm.streams.getMessage(t.stream, { last_by_subj: replaySubject });
    expect(Buffer.from(got!.data).equals(letter.payload)).toBe(true);
    expect(got!.header.get("Nats-Msg-Id")).toBe(replayMsgId(letter.id)); // not evt_r: the original's id, inside the window, would drop it
    const hdrs = Object.fromEntries(["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => [h, got!.header.get(h)]));
    expect(() => new Webhook(secret).verify(Buffer.from(got!.data).toString(), hdrs)).not.toThrow();
    // JetStream's ack (stream and sequence) is the attempt's evidence: the sequence is the stored message's own.
    const [attempt] = (await listAttempts(letter.id, parseInput(listAttemptsQuery, {}))).items;
    expect(attempt.responseHeaders).toEqual([
      ["jetstream-stream", t.stream],
      ["jetstream-seq", String(got!.seq)],
      ["jetstream-duplicate", "false"],
      ["nats-msg-id", replayMsgId(letter.id)],
    ]);
    expect(attempt.responseBody).toBe(`JetStream ack: stored in stream "${t.stream}" at sequence ${got!.seq}`);
    // Keyward retrying the same publish: JetStream's duplicate window keeps one message.
    const before = (await t.jsm.streams.info(t.stream)).state.messages;
    const again = await sendNats({ replayId, deadLetterId: letter.id, eventId: "evt_r", attempt: 2 }, `${NATS_URL}?subject=${replaySubject}`, { "webhook-id": "evt_r" }, letter.payload, new AbortController().signal);
    expect(again).toMatchObject({ ok: true, responseBody: `JetStream ack: a duplicate of message ${replayMsgId(letter.id)}, already stored in stream "${t.stream}" at sequence ${got!.seq}` });
    expect((await t.jsm.streams.info(t.stream)).state.messages).toBe(before);
    const nowhere = await sendNats({ replayId, deadLetterId: letter.id, eventId: "evt_r", attempt: 1 }, `${NATS_URL}?subject=nobody.listens.${uniq("s")}`, { "webhook-id": "x" }, letter.payload, new AbortController().signal);
    expect(nowhere).toMatchObject({ ok: false, retryable: true, error: expect.stringMatching(/no stream takes subject/) });
  });
});
