/**
 * The machine's NATS with JetStream for the NATS inlet and replay tests (TEST_NATS_URL, default
 * nats://127.0.0.1:4222; `.ci/run` starts nats-server -js when it is down). Every test makes a stream,
 * a consumer and an advisory stream of its own under unique names, and deletes them afterwards.
 */
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { randomBytes } from "node:crypto";

export const NATS_URL = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";

export type NatsTopology = {
  nc: NatsConnection;
  jsm: JetStreamManager;
  stream: string;
  consumer: string;
  subject: string;
  /** Publishes to the stream (with a Nats-Msg-Id when `id` is given, and more headers). */
  publish(data: string | Uint8Array, o?: { id?: string; headers?: Record<string, string>; subject?: string }): Promise<number>;
  /**
   * Fails every message of the consumer until it has used its deliveries (a nak each time): JetStream then
   * publishes a MAX_DELIVERIES advisory per message. Resolves when `n` messages were exhausted.
   */
  failAll(n: number): Promise<void>;
  /** Deletes the streams it made (and `extra` ones). */
  cleanup(extra?: string[]): Promise<void>;
};

export async function makeNatsTopology(maxDeliver = 2): Promise<NatsTopology> {
  const nc = await connect({ servers: NATS_URL.replace(/^nats:\/\//, "") });
  const jsm = await jetstreamManager(nc);
  const tag = `KWT${randomBytes(4).toString("hex")}`;
  const stream = `${tag}_ORDERS`;
  const consumer = `${tag}_worker`;
  const subject = `${tag.toLowerCase()}.orders.created`;
  await jsm.streams.add({ name: stream, subjects: [`${tag.toLowerCase()}.orders.>`] });
  await jsm.consumers.add(stream, { durable_name: consumer, ack_policy: AckPolicy.Explicit, max_deliver: maxDeliver, ack_wait: 5_000_000_000 });
  const js = jetstream(nc);
  return {
    nc,
    jsm,
    stream,
    consumer,
    subject,
    async publish(data, o = {}) {
      const h = natsHeaders();
      for (const [k, v] of Object.entries(o.headers ?? {})) h.set(k, v);
      const ack = await js.publish(o.subject ?? subject, data, { ...(o.id ? { msgID: o.id } : {}), headers: h });
      return ack.seq;
    },
    async failAll(n) {
      const c = await js.consumers.get(stream, consumer);
      const exhausted = new Set<number>();
      const until = Date.now() + 20_000;
      while (exhausted.size < n) {
        if (Date.now() > until) throw new Error(`only ${exhausted.size} of ${n} messages exhausted their deliveries`);
        const batch = await c.fetch({ max_messages: 50, expires: 1000 });
        for await (const m of batch) {
          if (m.info.deliveryCount >= maxDeliver) exhausted.add(m.seq);
          m.nak();
        }
      }
    },
    async cleanup(extra = []) {
      for (const s of [stream, ...extra]) await jsm.streams.delete(s).catch(() => {});
      await nc.close().catch(() => {});
    },
  };
}
