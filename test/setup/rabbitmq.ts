/**
 * The real RabbitMQ for the inlet and AMQP replay tests (TEST_AMQP_URL, default the local broker on
 * 127.0.0.1:5672 as guest; `.ci/run` starts it when it is down). Every test makes its own exchanges and
 * queues under unique names in the default vhost and deletes them afterwards: nothing is shared.
 */
import amqp, { type Channel, type ChannelModel, type Options } from "amqplib";
import { vi } from "vitest";
import { uniq } from "./db";

export const AMQP_URL = process.env.TEST_AMQP_URL ?? "amqp://guest:guest@127.0.0.1:5672";

/**
 * A dead-lettering set-up as the README describes it: `orders` (topic) → `work` queue whose dead letters
 * go through the fanout `dlx` into `dlq` (the inlet's queue). `work` has a message TTL of `ttlMs` when
 * given (then publishing is enough to dead-letter a message, reason `expired`); otherwise `reject` takes
 * messages off `work` and rejects them (reason `rejected`).
 */
export type Topology = {
  conn: ChannelModel;
  ch: Channel;
  orders: string;
  dlx: string;
  work: string;
  dlq: string;
  publish(routingKey: string, body: Buffer | string, options?: Options.Publish): void;
  /** Rejects (without requeue) every message now in `work`; answers how many. */
  rejectAll(): Promise<number>;
  /** Waits until `queue` holds `n` ready messages. */
  waitForDepth(queue: string, n: number, timeoutMs?: number): Promise<void>;
  /** Deletes the queues and exchanges and closes the connection. */
  cleanup(): Promise<void>;
};

export async function makeTopology(options: { ttlMs?: number } = {}): Promise<Topology> {
  const conn = await amqp.connect(AMQP_URL);
  const ch = await conn.createChannel();
  const tag = uniq("kwt");
  const orders = `${tag}.orders`;
  const dlx = `${tag}.dlx`;
  const work = `${tag}.work`;
  const dlq = `${tag}.dlq`;
  await ch.assertExchange(orders, "topic", { durable: false });
  await ch.assertExchange(dlx, "fanout", { durable: false });
  await ch.assertQueue(dlq, { durable: false });
  await ch.bindQueue(dlq, dlx, "");
  await ch.assertQueue(work, {
    durable: false,
    arguments: { "x-dead-letter-exchange": dlx, ...(options.ttlMs !== undefined ? { "x-message-ttl": options.ttlMs } : {}) },
  });
  await ch.bindQueue(work, orders, "#");
  const t: Topology = {
    conn,
    ch,
    orders,
    dlx,
    work,
    dlq,
    publish(routingKey, body, opts) {
      ch.publish(orders, routingKey, typeof body === "string" ? Buffer.from(body) : body, opts);
    },
    async rejectAll() {
      let n = 0;
      for (;;) {
        const m = await ch.get(work, { noAck: false });
        if (!m) return n;
        ch.nack(m, false, false);
        n++;
      }
    },
    async waitForDepth(queue, n, timeoutMs = 20_000) {
      await vi.waitFor(
        async () => {
          const { messageCount } = await ch.checkQueue(queue);
          if (messageCount !== n) throw new Error(`${queue} holds ${messageCount} messages, expected ${n}`);
        },
        { timeout: timeoutMs, interval: 25 },
      );
    },
    async cleanup() {
      for (const q of [work, dlq]) await ch.deleteQueue(q).catch(() => {});
      for (const e of [orders, dlx]) await ch.deleteExchange(e).catch(() => {});
      await conn.close().catch(() => {});
    },
  };
  return t;
}

/**
 * Polls `check` until it returns a value that is not undefined, and answers it; after `timeoutMs` throws the
 * last failure (`timed out waiting for <what>`, or what `check` threw: a check that fails is tried again).
 */
export function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const v = await check();
      if (v === undefined) throw new Error(`timed out waiting for ${what}`);
      return v;
    },
    { timeout: timeoutMs, interval: 50 },
  );
}
