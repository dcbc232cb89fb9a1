/**
 * The RabbitMQ inlet kind: one connection and one channel with `basic.qos(prefetch)`, so at most `prefetch`
 * messages are held unacknowledged; each message is delivered as its letter (../message.ts) and
 * acknowledged with basic.ack once the consumer stored it. Unacknowledged messages return to the queue
 * when the connection closes, and come back (their identity makes the second storage a no-op). The lag
 * is the queue's ready messages (a passive declare's messageCount).
 */
import type { ConsumeMessage } from "amqplib";
import { checkQueue, connectAmqp, describeAmqpError } from "@/lib/amqp/connect";
import { letterFromMessage } from "@/lib/inlets/message";
import type { Delivery, InletKindImpl, InletLink, LinkContext } from "./link";

export const amqpKind: InletKindImpl = {
  async check({ url, queue }) {
    await checkQueue(url, queue);
  },

  async connect(ctx: LinkContext): Promise<InletLink> {
    const { url, queue, prefetch } = ctx.config;
    const conn = await connectAmqp(url, { name: `keyward inlet ${ctx.config.id}` });
    let end!: (reason: string | null) => void;
    const ended = new Promise<string | null>((resolve) => (end = resolve));
    let closeReason: string | null = null;
    let closing = false;
    conn.on("close", (err?: Error) => {
      if (err) closeReason = describeAmqpError(err, url);
      end(closing ? null : (closeReason ?? "connection closed"));
    });
    try {
      const channel = await conn.createChannel();
      channel.on("error", (err: Error) => (closeReason = describeAmqpError(err, url)));
      channel.on("close", () => end(closing ? null : (closeReason ?? "channel closed")));
      await channel.prefetch(prefetch);
      await channel.checkQueue(queue).catch((err: Error) => {
        throw new Error(/404|NOT.FOUND/.test(err.message) ? `queue "${queue}" not found` : describeAmqpError(err, url));
      });
      const { consumerTag } = await channel.consume(
        queue,
        (msg: ConsumeMessage | null) => {
          if (msg === null) {
            closeReason = `the broker cancelled the consumer (queue "${queue}" deleted?)`;
            return end(closeReason);
          }
          void ctx.deliver([{ letter: letterFromMessage(msg, ctx.config, ctx.from, ctx.maxPayloadBytes), handle: msg }]);
        },
        { noAck: false },
      );
      return {
        ended,
        jobs: [],
        async lag() {
          return (await channel.checkQueue(queue)).messageCount;
        },
        async ack(batch: Delivery[]) {
          for (const d of batch) channel.ack(d.handle as ConsumeMessage);
        },
        async stop() {
          await channel.cancel(consumerTag).catch(() => {});
        },
        async close() {
          closing = true;
          end(null);
          await conn.close().catch(() => {});
        },
      };
    } catch (err) {
      closing = true;
      await conn.close().catch(() => {});
      throw err;
    }
  },
};
