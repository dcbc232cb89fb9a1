/**
 * "Send one item": the single seam between the executor and a transport. The executor (drive.ts) builds
 * the headers (deliver.ts: Standard Webhooks signing) and the body (the payload's stored bytes), then
 * calls the sender for the destination's scheme. A sender never throws; it classifies its own failures
 * (`retryable`), because what is worth another attempt depends on the transport.
 *
 * The broker senders' outcomes are listed in amqp-publish.ts, bullmq-publish.ts and nats-publish.ts.
 *
 * Outcome classification of the HTTP sender (send-http.ts; the executor retries only `retryable`
 * failures, up to MAX_ATTEMPTS):
 *   - 2xx                                    → ok
 *   - network error, timeout, 408, 429, 5xx  → failed, retryable (the destination may accept it later)
 *   - other 4xx                              → failed, not retryable (the destination rejects this request
 *                                              as such: bad signature, unknown route, invalid payload…)
 *   - 3xx                                    → failed, not retryable: redirects are never followed, so a
 *                                              signed payload never travels to an origin nobody configured
 *   - bad URL, unsupported scheme            → failed, not retryable
 *   - `signal` aborted by the caller         → failed, retryable, error "aborted" (pause/cancel/shutdown:
 *                                              the item was not delivered, the executor decides what next);
 *                                              aborted with a DeliveryTimeout → "no response within N ms"
 */
import "server-only";
import { sendAmqp } from "./amqp-publish";
import { sendBullmq } from "./bullmq-publish";
import { sendNats } from "./nats-publish";
import { sendHttp } from "./send-http";

/** What a sender knows of the item (for transports that carry ids of their own, e.g. a message id). */
export type SendItem = { replayId: string; deadLetterId: string; eventId: string; /** 1-based attempt number */ attempt: number };

/** One attempt's result; `responseBody` is the first EVIDENCE_BODY_BYTES of the answer, decoded safely. */
export type SendResult = {
  ok: boolean;
  retryable: boolean;
  status: number | null;
  error: string | null;
  latencyMs: number;
  responseBody: string | null;
  /**
   * The answer's headers as received, in order (masked where secret: evidence.ts). A broker has no HTTP
   * answer: its senders put what it answered here instead (brokerAnswer: the AMQP publish confirm, the
   * BullMQ job id, the JetStream ack's stream and sequence), with a sentence of it as `responseBody`.
   */
  responseHeaders?: HeaderPair[] | null;
};

/** A header as [name, value]. */
export type HeaderPair = [string, string];

/**
 * What a broker answered a publish, as an attempt's evidence (the dead-letter page's "Received" headers
 * and response): `fields` in order, values as text (null and undefined ones left out), and a sentence.
 */
export function brokerAnswer(fields: [string, string | number | boolean | null | undefined][], sentence: string): Pick<SendResult, "responseHeaders" | "responseBody"> {
  const pairs = fields.filter(([, v]) => v !== null && v !== undefined).map(([k, v]): HeaderPair => [k, String(v)]);
  return { responseHeaders: pairs.length > 0 ? pairs : null, responseBody: sentence };
}

/** The one "send one item" signature: swap the transport by the destination's scheme (senderFor). */
export type SendOne = (
  item: SendItem,
  destination: string,
  headers: Record<string, string>,
  body: Uint8Array,
  signal: AbortSignal,
) => Promise<SendResult>;

/** The reason a delivery's signal is aborted with when its timeout elapses. */
export class DeliveryTimeout extends Error {
  constructor(readonly ms: number) {
    super(`no response within ${ms} ms`);
    this.name = "DeliveryTimeout";
  }
}

/**
 * `signal`, also aborted with a DeliveryTimeout after `ms`. `clear()` stops the timer (call it when the
 * attempt is over, so a finished delivery leaves no timer behind).
 */
export function withTimeout(signal: AbortSignal | undefined, ms: number): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeliveryTimeout(ms)), ms);
  const onAbort = () => controller.abort(signal!.reason);
  if (signal?.aborted) controller.abort(signal.reason);
  else signal?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * The sender for a destination, by its URL scheme: amqp:// and amqps:// publish to RabbitMQ
 * (amqp-publish.ts sendAmqp), bullmq(s):// re-adds a BullMQ job (bullmq-publish.ts), nats:// publishes to
 * JetStream (nats-publish.ts), the destination then being the full URL, credentials included; anything
 * else goes to sendHttp, which refuses all but an http(s) URL (not retryable).
 */
export function senderFor(destination: string): SendOne {
  if (/^amqps?:\/\//i.test(destination)) return sendAmqp;
  if (/^bullmqs?:\/\//i.test(destination)) return sendBullmq;
  if (/^nats:\/\//i.test(destination)) return sendNats;
  return sendHttp;
}
