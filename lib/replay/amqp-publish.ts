/**
 * The AMQP replay target (issue 16 §2): a source whose replay destination is `amqp://…` or `amqps://…`
 * gets each replayed event published to RabbitMQ instead of POSTed. The executor
 * (drive.ts) sends each item through the "send one item" seam (send.ts), which picks `sendAmqp` for an
 * amqp:// or amqps:// destination; the preflight, the re-check just before the send, the rate, the
 * retries, the attempt evidence and the audit are the executor's, as for HTTP.
 *
 * Where it goes: to the exchange and routing key of the URL (`?exchange=x&routingKey=y`), or, for what
 * the URL leaves out, to the exchange and routing key the message was first published with (the x-death
 * origin a RabbitMQ inlet stored on the letter). A letter with neither (it came through the HTTP intake)
 * fails, not retryable, naming the fix.
 *
 * How: one publish on a confirm channel of a shared connection per destination URL, `mandatory` and
 * `persistent`, with the payload bytes exactly as stored, the letter's content type, `message_id` = the
 * `webhook-id`, and the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`
 * over exactly those bytes) plus `keyward-event-id` and `keyward-replay-id` as message headers.
 * Outcome (the executor retries `retryable` failures like HTTP ones, up to its attempt limit):
 *   - the broker confirms (ack) and did not return it         → ok
 *   - returned as unroutable (no queue bound: 312 NO_ROUTE)   → failed, retryable
 *   - nacked by the broker                                    → failed, retryable
 *   - no confirm within the timeout                           → failed, retryable
 *   - the channel or connection fails (unknown exchange: 404,
 *     broker down, login refused)                             → failed, retryable
 *   - no exchange known, a bad URL, a bad secret              → failed, not retryable
 *   - the caller's signal aborts                              → failed, retryable, "aborted"
 * Each publish has a channel of its own, so one that the broker closes (an unknown exchange) fails alone.
 * A connection unused for CONNECTION_IDLE_MS is closed.
 */
import "server-only";
import { z } from "zod";
import type { ChannelModel, ConfirmChannel } from "amqplib";
import { query } from "@/lib/db/sql";
import { connectAmqp, describeAmqpError } from "@/lib/amqp/connect";
import { parseAmqpTarget } from "@/lib/amqp/url";
import { brokerAnswer, DeliveryTimeout, type SendOne, type SendResult } from "./send";
import { DEFAULT_TIMEOUT_MS, EVENT_ID_HEADER, encodeEventIdHeader, signWebhook, webhookIdFor, type DeliverInput, type DeliverResult } from "./deliver";
import { MAX_ERROR_LENGTH } from "./send-http";

export const CONNECTION_IDLE_MS = 30_000;

/** One replayed item as the AMQP publish needs it. */
export type AmqpItem = {
  /** Where the message was first published (the letter's x-death origin), null when unknown. */
  exchange: string | null;
  routingKey: string | null;
  contentType: string;
};

const fail = (error: string, retryable: boolean): DeliverResult => ({
  ok: false,
  status: null,
  error: error.length > MAX_ERROR_LENGTH ? `${error.slice(0, MAX_ERROR_LENGTH - 1)}…` : error,
  retryable,
});

type Pooled = { conn: Promise<ChannelModel>; idle: NodeJS.Timeout | null; users: number };
const pool = new Map<string, Pooled>();

function release(key: string, p: Pooled): void {
  p.users--;
  if (p.users > 0) return;
  p.idle = setTimeout(() => {
    if (pool.get(key) !== p || p.users > 0) return;
    pool.delete(key);
    void p.conn.then((c) => c.close()).catch(() => {});
  }, CONNECTION_IDLE_MS);
  p.idle.unref();
}

/** A shared connection to `connectUrl` (opened on first use, dropped when it closes). */
function acquire(connectUrl: string): { pooled: Pooled; key: string } {
  let p = pool.get(connectUrl);
  if (!p) {
    const created: Pooled = { conn: connectAmqp(connectUrl, { name: "keyward replay" }), idle: null, users: 0 };
    p = created;
    pool.set(connectUrl, created);
    created.conn.then(
      (c) => c.on("close", () => pool.get(connectUrl) === created && pool.delete(connectUrl)),
      () => pool.get(connectUrl) === created && pool.delete(connectUrl),
    );
  }
  if (p.idle) clearTimeout(p.idle);
  p.idle = null;
  p.users++;
  return { pooled: p, key: connectUrl };
}

/** Closes every pooled publishing connection (shutdown, tests). */
export async function closeAmqpConnections(): Promise<void> {
  const all = [...pool.values()];
  pool.clear();
  await Promise.all(all.map((p) => p.conn.then((c) => c.close()).catch(() => {})));
}

/**
 * Publishes `body` for one replayed item to `destination` (an amqp(s) URL, credentials included) with
 * `headers` as message headers, and waits for the broker's confirm. Never throws; the result reads like
 * deliverOnce's (status is always null: there is no HTTP status).
 */
export async function deliverAmqp(
  item: AmqpItem,
  destination: string,
  headers: Record<string, string>,
  body: string | Uint8Array,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<DeliverResult> {
  let target: ReturnType<typeof parseAmqpTarget>;
  try {
    target = parseAmqpTarget(destination);
  } catch {
    return fail("destination is not a valid AMQP URL", false);
  }
  const exchange = target.exchange ?? item.exchange;
  if (exchange === null) {
    return fail(
      "no exchange to publish to: this dead letter did not come through a RabbitMQ inlet (no x-death origin); add ?exchange=…&routingKey=… to the destination",
      false,
    );
  }
  const routingKey = target.routingKey ?? item.routingKey ?? "";
  if (options.signal?.aborted) return fail("aborted", true);

  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { pooled, key } = acquire(target.connectUrl);
  let channel: ConfirmChannel | null = null;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const outcome = new Promise<DeliverResult>((resolve) => {
      timer = setTimeout(() => resolve(fail(`no confirm from the broker within ${timeoutMs} ms`, true)), timeoutMs);
      onAbort = () => resolve(fail("aborted", true));
      options.signal?.addEventListener("abort", onAbort, { once: true });
      void (async () => {
        try {
          const conn = await pooled.conn;
          const ch = await conn.createConfirmChannel();
          channel = ch;
          let returned: string | null = null;
          let closedWith: string | null = null;
          ch.on("error", (err: Error) => (closedWith = describeAmqpError(err, destination)));
          ch.on("return", (msg: { fields: { replyCode?: number; replyText?: string } }) => {
            returned = `${msg.fields.replyCode ?? 312} ${msg.fields.replyText ?? "NO_ROUTE"}`;
          });
          ch.on("close", () => resolve(fail(`the broker closed the channel${closedWith ? `: ${closedWith}` : ""}`, true)));
          const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
          ch.publish(
            exchange,
            routingKey,
            bytes,
            {
              mandatory: true,
              persistent: true,
              contentType: item.contentType,
              messageId: headers["webhook-id"],
              timestamp: Number(headers["webhook-timestamp"]) || Math.floor(Date.now() / 1000),
              headers,
            },
            (err: unknown) => {
              const where: [string, string][] = [["amqp-exchange", exchange], ["amqp-routing-key", routingKey], ["amqp-message-id", headers["webhook-id"]]];
              if (err) {
                const e = closedWith ? `the broker closed the channel: ${closedWith}` : "nacked by the broker";
                return resolve({ ...fail(e, true), answer: { fields: [["amqp-confirm", "nack"], ...where], sentence: `basic.nack: ${e}` } });
              }
              if (returned) {
                return resolve({
                  ...fail(`unroutable: the broker returned it (${returned}) from exchange "${exchange}" with routing key "${routingKey}"`, true),
                  answer: { fields: [["amqp-confirm", "ack"], ["amqp-return", returned], ...where], sentence: `basic.return ${returned}, then basic.ack: no queue took it` },
                });
              }
              resolve({
                ok: true,
                status: null,
                error: null,
                retryable: false,
                answer: { fields: [["amqp-confirm", "ack"], ...where], sentence: `basic.ack: the broker confirmed the publish to exchange "${exchange}" with routing key "${routingKey}"` },
              });
            },
          );
        } catch (err) {
          resolve(fail(err instanceof Error ? describeAmqpError(err, destination) : String(err), true));
        }
      })();
    });
    return await outcome;
  } finally {
    clearTimeout(timer);
    if (onAbort) options.signal?.removeEventListener("abort", onAbort);
    const ch = channel as ConfirmChannel | null;
    if (ch) await ch.close().catch(() => {});
    release(key, pooled);
  }
}

/** The message headers of one replayed event: Standard Webhooks' three, keyward-event-id and keyward-replay-id. */
export function replayHeaders(input: Pick<DeliverInput, "id" | "body" | "secret" | "replayId">, now = new Date()): Record<string, string> {
  return {
    ...signWebhook({ id: webhookIdFor(input.id), timestamp: now, body: input.body, secret: input.secret }),
    [EVENT_ID_HEADER]: encodeEventIdHeader(input.id),
    "keyward-replay-id": input.replayId,
  };
}

/**
 * The AMQP "send one item" (send.ts SendOne): publishes the dead letter's bytes to `destination` (the full
 * amqp(s) URL), with the Standard Webhooks headers the executor signed, using the letter's stored origin
 * for the exchange and routing key the URL leaves out. No HTTP status and no answer body: `status` and
 * `responseBody` are null. `signal` carries the executor's timeout (a DeliveryTimeout reads as "no confirm").
 */
export const sendAmqp: SendOne = async (item, destination, headers, body, signal): Promise<SendResult> => {
  const started = performance.now();
  const [origin] = await query(
    z.object({ origin_exchange: z.string().nullable(), origin_routing_key: z.string().nullable() }),
    "SELECT origin_exchange, origin_routing_key FROM dead_letters WHERE id = $1::uuid",
    [item.deadLetterId],
  );
  // The message headers among the HTTP delivery's (drive.ts signs once for both transports); read here, not
  // at load: deliver.ts → send.ts → this module is an import cycle.
  const names = ["webhook-id", "webhook-timestamp", "webhook-signature", EVENT_ID_HEADER, "keyward-replay-id"];
  const message = Object.fromEntries(names.filter((h) => headers[h] !== undefined).map((h) => [h, headers[h]]));
  const result = await deliverAmqp(
    { exchange: origin?.origin_exchange ?? null, routingKey: origin?.origin_routing_key ?? null, contentType: headers["content-type"] ?? "application/json" },
    destination,
    message,
    body,
    // The executor's signal ends the wait (its timeout included); this one only bounds a stray signal-less call.
    { timeoutMs: DEFAULT_TIMEOUT_MS * 6, signal },
  );
  const timedOut = signal.aborted && signal.reason instanceof DeliveryTimeout;
  return {
    ok: result.ok,
    retryable: result.retryable,
    status: null,
    error: timedOut && result.error === "aborted" ? `no confirm from the broker within ${(signal.reason as DeliveryTimeout).ms} ms` : result.error,
    latencyMs: Math.round(performance.now() - started),
    ...(result.answer ? brokerAnswer(result.answer.fields, result.answer.sentence) : { responseBody: null }),
  };
};
