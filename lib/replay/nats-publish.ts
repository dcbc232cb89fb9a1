/**
 * The NATS JetStream replay target (issue 26): a source whose replay destination is `nats://…` gets each
 * replayed event published to JetStream instead of POSTed, through the executor's "send one item" seam
 * (send.ts), with everything else (preflight, re-check, rate, retries, audit) as for HTTP.
 *
 * Destination: `nats://[user:password@ | token@]host[:port][?subject=<subject>]`; without `subject`, the
 * letter's own subject (a letter from a NATS inlet). The message: the payload's bytes exactly, headers
 * `Content-Type`, the Standard Webhooks three (`webhook-id`, `webhook-timestamp`, `webhook-signature` over
 * exactly those bytes), `keyward-event-id`, `keyward-replay-id`, and `Nats-Msg-Id` = `keyward-<dead letter
 * id>`: the same for every attempt at one letter, so JetStream's own duplicate window drops a publish
 * Keyward retried (a lost acknowledgement); not the event's own id, which the original message may carry
 * within the window (it would drop the replay itself). Delivered when the stream acknowledges it (a
 * duplicate acknowledgement too: an earlier attempt stored it). No stream for the
 * subject (no responders), a timeout or a lost connection: failed, retryable; no subject known or a bad
 * URL: failed, not retryable. Connections are shared per destination and closed after 30 s unused.
 */
import "server-only";
import { z } from "zod";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { query } from "@/lib/db/sql";
import { letterOriginSchema } from "@/lib/deadletters/schema";
import { connectNats, describeNatsError } from "@/lib/inlets/kinds/nats";
import { brokerAnswer, DeliveryTimeout, type SendOne, type SendResult } from "./send";
import { MAX_ERROR_LENGTH } from "./send-http";

export const CONNECTION_IDLE_MS = 30_000;
/** The Nats-Msg-Id every attempt at replaying this dead letter carries. */
export const replayMsgId = (deadLetterId: string) => `keyward-${deadLetterId}`;

type Pooled = { conn: Promise<NatsConnection>; idle: NodeJS.Timeout | null; users: number };
const pool = new Map<string, Pooled>();

function acquire(connectUrl: string): Pooled {
  let p = pool.get(connectUrl);
  if (!p) {
    const created: Pooled = { conn: connectNats(connectUrl, "keyward replay"), idle: null, users: 0 };
    p = created;
    pool.set(connectUrl, created);
    const drop = () => pool.get(connectUrl) === created && pool.delete(connectUrl);
    created.conn.then((c) => void c.closed().then(drop), drop);
  }
  if (p.idle) clearTimeout(p.idle);
  p.idle = null;
  p.users++;
  return p;
}

function release(connectUrl: string, p: Pooled): void {
  p.users--;
  if (p.users > 0) return;
  p.idle = setTimeout(() => {
    if (pool.get(connectUrl) !== p || p.users > 0) return;
    pool.delete(connectUrl);
    void p.conn.then((c) => c.close()).catch(() => {});
  }, CONNECTION_IDLE_MS);
  p.idle.unref();
}

/** Closes every pooled connection (shutdown, tests). */
export async function closeNatsConnections(): Promise<void> {
  const all = [...pool.values()];
  pool.clear();
  await Promise.all(all.map((p) => p.conn.then((c) => c.close()).catch(() => {})));
}

const clip = (e: string) => (e.length > MAX_ERROR_LENGTH ? `${e.slice(0, MAX_ERROR_LENGTH - 1)}…` : e);

/** The message headers of a replayed event, from the executor's (drive.ts signs once for every transport). */
const MESSAGE_HEADERS = ["content-type", "webhook-id", "webhook-timestamp", "webhook-signature", "keyward-event-id", "keyward-replay-id"];

export const sendNats: SendOne = async (item, destination, headers, body, signal): Promise<SendResult> => {
  const started = performance.now();
  const result = (ok: boolean, retryable: boolean, error: string | null): SendResult => ({
    ok,
    retryable,
    status: null,
    error: error === null ? null : clip(error),
    latencyMs: Math.round(performance.now() - started),
    responseBody: null,
  });
  let url: URL;
  try {
    url = new URL(destination);
  } catch {
    return result(false, false, "destination is not a valid nats:// URL");
  }
  const [letter] = await query(z.object({ origin: letterOriginSchema.nullable() }), "SELECT origin FROM dead_letters WHERE id = $1::uuid", [item.deadLetterId]);
  const origin = letter?.origin?.kind === "nats" ? letter.origin : null;
  const subject = url.searchParams.get("subject") ?? origin?.subject ?? null;
  if (!subject) return result(false, false, "no subject to publish to: this dead letter did not come through a NATS inlet; add ?subject=… to the destination");
  url.search = "";
  const connectUrl = url.toString();
  const interrupted = () => result(false, true, signal.reason instanceof DeliveryTimeout ? signal.reason.message : "aborted");
  if (signal.aborted) return interrupted();
  const pooled = acquire(connectUrl);
  try {
    const conn = await pooled.conn;
    const h = natsHeaders();
    for (const name of MESSAGE_HEADERS) if (headers[name] !== undefined) h.set(name, headers[name]);
    const aborted = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    const ack = await Promise.race([jetstream(conn).publish(subject, body, { msgID: replayMsgId(item.deadLetterId), headers: h, timeout: 10_000 }), aborted]);
    // JetStream's ack: the stream that stored it, at which sequence, and whether it was a duplicate of our msgID (already stored).
    return {
      ...result(true, false, null),
      ...brokerAnswer(
        [["jetstream-stream", ack.stream], ["jetstream-seq", ack.seq], ["jetstream-duplicate", ack.duplicate], ["jetstream-domain", ack.domain], ["nats-msg-id", replayMsgId(item.deadLetterId)]],
        ack.duplicate
          ? `JetStream ack: a duplicate of message ${replayMsgId(item.deadLetterId)}, already stored in stream "${ack.stream}" at sequence ${ack.seq}`
          : `JetStream ack: stored in stream "${ack.stream}" at sequence ${ack.seq}`,
      ),
    };
  } catch (err) {
    if (signal.aborted) return interrupted();
    const message = describeNatsError(err, url.host);
    return result(false, true, /no responders|503|jetstream is not enabled/i.test(message) ? `no stream takes subject "${subject}" (no responders: no stream captures it, or JetStream is off)` : `publishing failed: ${message}`);
  } finally {
    release(connectUrl, pooled);
  }
};
