/**
 * One RabbitMQ message → one dead letter (pure; the consumer in consumer.ts does the I/O).
 *
 * - payload: the message body, byte for byte; content type: its `content_type` property when that is a
 *   media type, else application/octet-stream (nothing is guessed from the bytes);
 * - event id: read where the inlet says (schema.ts EventIdFrom); a message without a usable one is kept
 *   as `unidentified` with the reason (never dropped, never replayed: there is no key to check);
 * - event type: the `type` property, else the original routing key, else `amqp.message`;
 * - attempts, failedAt, queue, error: from the newest `x-death` entry (RabbitMQ puts the most recent
 *   death first): its count, its time, the queue it died in, and its reason (`rejected`, `expired`,
 *   `maxlen`, `delivery_limit`); the original exchange and routing key too, so an AMQP replay can publish
 *   the message back where it was first sent;
 * - identity (`originKey`): a SHA-256 over what a redelivery of the same message repeats exactly (source,
 *   event id, message id, correlation id, timestamp, the newest x-death entry, the body's hash). The table
 *   keeps it unique per source, so a message redelivered after a crash between commit and ack is stored
 *   once. Two messages identical in all of these, dying in the same second, count as one.
 */
import { createHash } from "node:crypto";
import { eventId as eventIdSchema, eventType as eventTypeSchema } from "@/lib/claims/schema";
import { mediaType, MAX_ERROR_CHARS } from "@/lib/deadletters/schema";
import { storableRepresentation, unstorableReason } from "@/lib/http/fields";
import { identifierOf, readJsonPath } from "@/lib/deadletters/json-path";
import type { EventIdFrom } from "./schema";

export const OCTET_STREAM = "application/octet-stream";
export const DEFAULT_EVENT_TYPE = "amqp.message";

/** What the consumer hands over of an amqplib message (its `content`, `fields` and `properties`). */
export type InletMessage = {
  content: Buffer;
  fields: { exchange: string; routingKey: string; redelivered?: boolean };
  properties: {
    contentType?: unknown;
    messageId?: unknown;
    correlationId?: unknown;
    type?: unknown;
    timestamp?: unknown;
    headers?: Record<string, unknown>;
  };
};

export type XDeath = {
  count: number;
  reason: string;
  queue: string;
  exchange: string | null;
  routingKeys: string[];
  time: Date | null;
};

const asString = (v: unknown): string | null => (typeof v === "string" ? v : Buffer.isBuffer(v) ? v.toString("utf8") : null);

/** Text PostgreSQL can store: a NUL or lone surrogate (which a broker may carry) written as an escape. */
const storable = (s: string): string => (unstorableReason(s) ? storableRepresentation(s) : s);
const storableOrNull = (s: string | null): string | null => (s === null ? null : storable(s));

function asTime(v: unknown): Date | null {
  const seconds = typeof v === "number" ? v : (v as { "!"?: string; value?: unknown } | null)?.["!"] === "timestamp" ? (v as { value: unknown }).value : null;
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds <= 0) return null;
  const d = new Date(seconds * 1000);
  return Number.isNaN(d.getTime()) || d.getUTCFullYear() > 9999 ? null : d;
}

/** The `x-death` header's entries, newest first, as RabbitMQ writes them; [] when absent or malformed. Pure. */
export function parseXDeath(headers: Record<string, unknown> | undefined): XDeath[] {
  const raw = headers?.["x-death"];
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((e): XDeath[] => {
    if (typeof e !== "object" || e === null) return [];
    const entry = e as Record<string, unknown>;
    const count = typeof entry.count === "number" && Number.isInteger(entry.count) && entry.count >= 0 ? entry.count : 1;
    const keys = Array.isArray(entry["routing-keys"]) ? entry["routing-keys"].map(asString).filter((k): k is string => k !== null) : [];
    return [
      {
        count,
        reason: asString(entry.reason) ?? "unknown",
        queue: asString(entry.queue) ?? "",
        exchange: asString(entry.exchange),
        routingKeys: keys,
        time: asTime(entry.time),
      },
    ];
  });
}

type Found = { ok: true; eventId: string } | { ok: false; reason: string };

const describe = (from: EventIdFrom) =>
  from.kind === "json" ? `json:${from.path.join(".")}` : `${from.kind}:${from.name}`;

/** Reads the event id where `from` says, and checks it is one the claim API accepts. Pure. */
export function extractEventId(msg: InletMessage, from: EventIdFrom): Found {
  const found = locate(msg, from);
  if (!found.ok) return found;
  const valid = eventIdSchema.safeParse(found.eventId);
  if (!valid.success) return { ok: false, reason: `the event id at ${describe(from)} is not usable: ${valid.error.issues[0].message}` };
  return found;
}

function locate(msg: InletMessage, from: EventIdFrom): Found {
  const where = describe(from);
  if (from.kind === "property") {
    const v = from.name === "message_id" ? msg.properties.messageId : msg.properties.correlationId;
    if (v === undefined || v === null || v === "") return { ok: false, reason: `the message has no ${from.name} property` };
    return typeof v === "string" ? { ok: true, eventId: v } : { ok: false, reason: `${where} is not a string` };
  }
  if (from.kind === "header") {
    const v = msg.properties.headers?.[from.name];
    if (v === undefined || v === null) return { ok: false, reason: `the message has no ${from.name} header` };
    if (typeof v === "number" && Number.isSafeInteger(v)) return { ok: true, eventId: String(v) };
    if (typeof v === "string") return { ok: true, eventId: v };
    if (Buffer.isBuffer(v)) {
      try {
        return { ok: true, eventId: new TextDecoder("utf-8", { fatal: true }).decode(v) };
      } catch {
        return { ok: false, reason: `${where} is bytes that are not UTF-8` };
      }
    }
    return { ok: false, reason: `${where} is ${Array.isArray(v) ? "an array" : typeof v}, not a string` };
  }
  const found = readJsonPath(msg.content, from.path);
  if (!found.ok) return { ok: false, reason: found.reason === "not_json" ? `the body is not JSON, so ${where} cannot be read` : `the JSON body has no ${from.path.join(".")}` };
  const id = identifierOf(found.value, where);
  return id.ok ? { ok: true, eventId: id.id } : { ok: false, reason: id.reason };
}

/** A message as the dead-letter intake stores it (lib/deadletters/intake.ts recordInletLetters). */
export type InletLetter = {
  source: string;
  inletId: string;
  eventId: string;
  eventType: string;
  payload: Buffer;
  contentType: string;
  error: string;
  attempts: number;
  failedAt: string | null;
  queue: string | null;
  originExchange: string | null;
  originRoutingKey: string | null;
  originKey: string;
  /** Why the event id could not be read: the letter is stored `unidentified`. Null when it was. */
  unidentifiedReason: string | null;
  /** Where a BullMQ or NATS message came from (kinds/), kept for its page and its replay. */
  origin?: Record<string, unknown> | null;
};

/**
 * The dead letter a message becomes (see the header). A body over `maxPayloadBytes` (KEYWARD_MAX_PAYLOAD_BYTES)
 * is not stored: the letter is kept, empty and `unidentified`, with the reason, so the queue moves on. Pure.
 */
export function letterFromMessage(
  msg: InletMessage,
  inlet: { id: string; source: string; queue: string },
  from: EventIdFrom,
  maxPayloadBytes = Infinity,
): InletLetter {
  const oversize = msg.content.length > maxPayloadBytes;
  const deaths = parseXDeath(msg.properties.headers);
  const death = deaths[0];
  const found: Found = oversize
    ? { ok: false, reason: `the body is ${msg.content.length} bytes, over KEYWARD_MAX_PAYLOAD_BYTES (${maxPayloadBytes}): it was not stored` }
    : extractEventId(msg, from);
  const props = msg.properties;
  const originKey = createHash("sha256")
    .update(
      JSON.stringify([
        inlet.source,
        found.ok ? found.eventId : null,
        asString(props.messageId),
        asString(props.correlationId),
        typeof props.timestamp === "number" ? props.timestamp : null,
        death ? [death.queue, death.reason, death.count, death.time?.getTime() ?? null, death.exchange, death.routingKeys] : null,
        createHash("sha256").update(msg.content).digest("hex"),
      ]),
    )
    .digest("hex");
  const headers = props.headers ?? {};
  const originExchange = death?.exchange ?? asString(headers["x-first-death-exchange"]);
  const originRoutingKey = death?.routingKeys[0] ?? null;
  const typeCandidates = [asString(props.type), originRoutingKey, msg.fields.routingKey];
  const eventType = typeCandidates.find((t) => t !== null && eventTypeSchema.safeParse(t).success) ?? DEFAULT_EVENT_TYPE;
  const contentType = typeof props.contentType === "string" && mediaType.safeParse(props.contentType).success ? props.contentType : OCTET_STREAM;
  const failedAt = death?.time ?? asTime(props.timestamp);
  const error = storable(
    death
      ? `${death.reason} in queue ${death.queue || "(unnamed)"}${death.count > 1 ? ` (dead-lettered ${death.count} times)` : ""}`
      : `arrived in ${inlet.queue} without an x-death header (not dead-lettered by RabbitMQ)`,
  );
  return {
    source: inlet.source,
    inletId: inlet.id,
    eventId: found.ok ? found.eventId : `unidentified:${originKey.slice(0, 32)}`,
    eventType,
    payload: oversize ? Buffer.alloc(0) : msg.content,
    contentType,
    error: error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS - 1)}…` : error,
    attempts: Math.min(death?.count ?? 0, 1_000_000),
    failedAt: failedAt?.toISOString() ?? null,
    // The dead-letter intake's queue rule: at most 255 characters, no control characters.
    queue: storableRepresentation(death?.queue || inlet.queue).slice(0, 255),
    originExchange: storableOrNull(originExchange),
    originRoutingKey: storableOrNull(originRoutingKey),
    originKey,
    unidentifiedReason: found.ok ? null : storable(found.reason),
  };
}
