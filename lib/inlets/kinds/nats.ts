/**
 * The NATS JetStream inlet kind: takes the messages a consumer gave up on. JetStream publishes an advisory
 * on `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>` when a message has been delivered
 * max_deliver times without an ack; advisories are plain NATS messages (lost when nobody listens), so the
 * inlet keeps them in a stream of its own (`advisoryStream`, work-queue retention, created when missing)
 * and reads that stream through a durable pull consumer (`keyward`, explicit acks, at most `prefetch`
 * unacknowledged). For each advisory it fetches the original message by its sequence from the stream
 * (STREAM.MSG.GET), and delivers it as a letter: the data byte for byte, its headers, `Nats-Msg-Id` as the
 * event id (by default). The advisory is acknowledged only after the letter committed (and removed from
 * the work queue then); one not acknowledged is delivered again after its ack wait, and its identity
 * (stream, consumer, sequence) makes the second storage a no-op. A message no longer in the stream (a
 * limit removed it) is kept as `unidentified` with the reason. The lag is the advisories not yet delivered.
 */
import { createHash } from "node:crypto";
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { eventType as eventTypeSchema } from "@/lib/claims/schema";
import { MAX_ERROR_CHARS, mediaType } from "@/lib/deadletters/schema";
import { storableRepresentation } from "@/lib/http/fields";
import { extractEventId, OCTET_STREAM, type InletLetter, type InletMessage } from "@/lib/inlets/message";
import type { EventIdFrom, InletSettings } from "@/lib/inlets/schema";
import type { Delivery, InletKindImpl, InletLink, LinkContext } from "./link";

export const CONNECT_TIMEOUT_MS = 5000;
export const ADVISORY_CONSUMER = "keyward";
export const DEFAULT_EVENT_TYPE = "nats.message";
export const advisorySubject = (stream: string, consumer: string) => `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${consumer}`;

/** Connects with the URL's credentials (user:password, or a token as the user part), never reconnecting by itself. */
export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  const u = new URL(url);
  const user = decodeURIComponent(u.username);
  const pass = decodeURIComponent(u.password);
  u.username = "";
  u.password = "";
  try {
    return await connect({
      servers: u.toString().replace(/\/$/, ""),
      name,
      timeout: CONNECT_TIMEOUT_MS,
      reconnect: false,
      ...(user && pass ? { user, pass } : user ? { token: user } : {}),
    });
  } catch (err) {
    throw new Error(describeNatsError(err, u.host), { cause: err });
  }
}

export function describeNatsError(err: unknown, host: string): string {
  const e = err as { code?: string; message?: string };
  const raw = String(e?.message ?? err);
  if (/ECONNREFUSED/.test(raw) || e?.code === "ECONNREFUSED") return `connection refused by ${host}`;
  if (/authoriz|authentic/i.test(raw)) return `login refused by ${host}: check the credentials`;
  if (/timeout/i.test(raw)) return `no answer from ${host} (timeout)`;
  return raw.length > 500 ? `${raw.slice(0, 499)}…` : raw;
}

/** The MAX_DELIVERIES advisory's fields Keyward reads. */
export type MaxDeliveriesAdvisory = { stream: string; consumer: string; stream_seq: number; deliveries: number; timestamp?: string };

/** A stored message as fetched by sequence: what letterFromNats needs. */
export type NatsOriginal = { subject: string; seq: number; data: Uint8Array; headers: [string, string][]; time: Date | null };

/** The dead letter an advisory (and its original message, or null when gone) becomes. Pure. */
export function letterFromNats(
  advisory: MaxDeliveriesAdvisory,
  original: NatsOriginal | null,
  inlet: { id: string; source: string; queue: string },
  from: EventIdFrom,
  maxPayloadBytes = Infinity,
): InletLetter {
  const originKey = createHash("sha256").update(JSON.stringify([inlet.source, "nats", advisory.stream, advisory.consumer, advisory.stream_seq])).digest("hex");
  const body = original ? Buffer.from(original.data.buffer, original.data.byteOffset, original.data.byteLength) : Buffer.alloc(0);
  const oversize = body.length > maxPayloadBytes;
  const headerMap = Object.fromEntries((original?.headers ?? []).map(([k, v]) => [k, v]));
  const lower = (name: string) => original?.headers.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  const msg: InletMessage = { content: body, fields: { exchange: "", routingKey: original?.subject ?? "" }, properties: { headers: headerMap } };
  const found = !original
    ? { ok: false as const, reason: `the message (stream ${advisory.stream}, sequence ${advisory.stream_seq}) is no longer in the stream` }
    : oversize
      ? { ok: false as const, reason: `the message is ${body.length} bytes, over KEYWARD_MAX_PAYLOAD_BYTES (${maxPayloadBytes}): it was not stored` }
      : from.kind === "header"
        ? (() => {
            const v = lower(from.name);
            return v === undefined ? { ok: false as const, reason: `the message has no ${from.name} header` } : extractEventId({ ...msg, properties: { headers: { [from.name]: v } } }, from);
          })()
        : extractEventId(msg, from);
  const type = lower("content-type");
  const died = advisory.timestamp ? new Date(advisory.timestamp) : null;
  const error = storableRepresentation(`exhausted ${advisory.deliveries} deliveries to consumer ${advisory.consumer} of stream ${advisory.stream}`);
  return {
    source: inlet.source,
    inletId: inlet.id,
    eventId: found.ok ? found.eventId : `unidentified:${originKey.slice(0, 32)}`,
    eventType: original && eventTypeSchema.safeParse(original.subject).success ? original.subject : DEFAULT_EVENT_TYPE,
    payload: oversize ? Buffer.alloc(0) : body,
    contentType: type && mediaType.safeParse(type).success ? type : OCTET_STREAM,
    error: error.slice(0, MAX_ERROR_CHARS),
    attempts: Math.min(advisory.deliveries, 1_000_000),
    failedAt: died && !Number.isNaN(died.getTime()) ? died.toISOString() : null,
    queue: storableRepresentation(inlet.queue).slice(0, 255),
    originExchange: null,
    originRoutingKey: null,
    originKey,
    unidentifiedReason: found.ok ? null : storableRepresentation(found.reason),
    origin: {
      kind: "nats",
      stream: advisory.stream,
      consumer: advisory.consumer,
      seq: advisory.stream_seq,
      deliveries: advisory.deliveries,
      subject: original?.subject ?? null,
      headers: (original?.headers ?? []).map(([k, v]) => [storableRepresentation(k), storableRepresentation(v)]),
      time: original?.time?.toISOString() ?? null,
    },
  };
}

const headersOf = (m: { header?: { keys(): string[]; values(k: string): string[] } } | null): [string, string][] =>
  m?.header ? m.header.keys().flatMap((k) => m.header!.values(k).map((v): [string, string] => [k, v])) : [];

/** Creates the advisory stream and its durable consumer when missing (idempotent). */
async function ensureAdvisoryStream(jsm: JetStreamManager, settings: InletSettings, prefetch: number): Promise<void> {
  const name = settings.advisoryStream!;
  const subject = advisorySubject(settings.stream!, settings.consumer!);
  try {
    await jsm.streams.info(name);
  } catch {
    await jsm.streams.add({ name, subjects: [subject], retention: RetentionPolicy.Workqueue, storage: StorageType.File });
  }
  try {
    await jsm.consumers.info(name, ADVISORY_CONSUMER);
  } catch {
    await jsm.consumers.add(name, { durable_name: ADVISORY_CONSUMER, ack_policy: AckPolicy.Explicit, max_ack_pending: prefetch, ack_wait: 30_000_000_000 });
  }
}

export const natsKind: InletKindImpl = {
  /** Also creates the advisory stream, so advisories are kept from now on, before any consumer runs. */
  async check({ url, settings }) {
    const nc = await connectNats(url, "keyward check");
    try {
      const jsm = await jetstreamManager(nc);
      try {
        await jsm.consumers.info(settings.stream!, settings.consumer!);
      } catch (err) {
        throw new Error(`consumer "${settings.consumer}" of stream "${settings.stream}" not found (${(err as Error).message})`, { cause: err });
      }
      await ensureAdvisoryStream(jsm, settings, 50);
    } finally {
      await nc.close().catch(() => {});
    }
  },

  async connect(ctx: LinkContext): Promise<InletLink> {
    const { url, settings, prefetch, id: inletId } = ctx.config;
    const host = new URL(url).host;
    const nc = await connectNats(url, `keyward inlet ${inletId}`);
    let closing = false;
    const ended = nc.closed().then((err) => (closing ? null : err ? describeNatsError(err, host) : "the connection to NATS closed"));
    try {
      const jsm = await jetstreamManager(nc);
      await ensureAdvisoryStream(jsm, settings, prefetch);
      const consumer = await jetstream(nc).consumers.get(settings.advisoryStream!, ADVISORY_CONSUMER);
      const messages = await consumer.consume({ max_messages: prefetch });
      void (async () => {
        for await (const m of messages) {
          let advisory: MaxDeliveriesAdvisory;
          try {
            advisory = m.json<MaxDeliveriesAdvisory>();
          } catch {
            m.term(); // not an advisory: nothing to store, never again
            continue;
          }
          let original: NatsOriginal | null = null;
          const stored = await jsm.streams.getMessage(advisory.stream, { seq: advisory.stream_seq }).catch((err: Error) => {
            if (/no message found|not found/i.test(err.message)) return null;
            throw err;
          });
          if (stored) original = { subject: stored.subject, seq: stored.seq, data: stored.data, headers: headersOf(stored), time: stored.time };
          void ctx.deliver([{ letter: letterFromNats(advisory, original, ctx.config, ctx.from, ctx.maxPayloadBytes), handle: m }]);
        }
      })().catch((err: Error) => {
        if (!closing) { ctx.log(`inlet ${inletId}: ${describeNatsError(err, host)}`); void nc.close().catch(() => {}); }
      });
      return {
        ended,
        jobs: [],
        async lag() {
          return (await jsm.consumers.info(settings.advisoryStream!, ADVISORY_CONSUMER)).num_pending;
        },
        async ack(batch: Delivery[]) {
          // ackAck: the server confirms, so a lost ack is a redelivery (a skipped repeat), never a silent loss.
          for (const d of batch) await (d.handle as JsMsg).ackAck({ timeout: 5000 });
        },
        async stop() {
          await messages.close().catch(() => {});
        },
        async close() {
          closing = true;
          await messages.close().catch(() => {});
          await nc.close().catch(() => {});
        },
      };
    } catch (err) {
      closing = true;
      await nc.close().catch(() => {});
      throw new Error(describeNatsError(err, host), { cause: err });
    }
  },
};
