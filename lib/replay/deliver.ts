/**
 * What a replayed event carries: the Standard Webhooks signature over the exact bytes sent, the
 * `webhook-id` mapping of event ids (docs/replay-delivery.md) and the Keyward headers; and `deliverOnce`,
 * one signed delivery (headers from here, the POST from send-http.ts), for callers outside the executor
 * (the re-drive benchmark's baseline, tests). The executor (drive.ts) decides what to send and when.
 */
import "server-only";
import { createHash, createHmac } from "node:crypto";
import { senderFor, withTimeout } from "./send";

export const USER_AGENT = "Keyward-Replay/1.0 (webhook re-drive)";
export const DEFAULT_TIMEOUT_MS = 10_000;
/** The header carrying the original event id, percent-encoded UTF-8 (see webhookIdFor). */
export const EVENT_ID_HEADER = "keyward-event-id";

/**
 * An event id sent as `webhook-id` unchanged: 1–255 characters of an HTTP token (RFC 9110 tchar: ASCII
 * letters, digits and !#$%&'*+-^_`|~), without `.` (Standard Webhooks signs "id.timestamp.body", and
 * asks ids to contain no dot). Anything else (non-ASCII, dots, spaces, `/`, `:`…) is mapped.
 */
const PLAIN_ID = /^[A-Za-z0-9!#$%&'*+\-^_`|~]{1,255}$/;

/**
 * The `webhook-id` a replay of `eventId` carries: the event id itself when it is a plain token (above),
 * otherwise `kw_` + the first 16 bytes of SHA-256(UTF-8 id) as base64url (25 characters): stable, so
 * every replay of one event carries the same id, and ASCII, so it travels as the exact bytes signed.
 * Pure.
 */
export function webhookIdFor(eventId: string): string {
  if (PLAIN_ID.test(eventId)) return eventId;
  return `kw_${createHash("sha256").update(eventId, "utf8").digest().subarray(0, 16).toString("base64url")}`;
}

/** The `keyward-event-id` header value: the event id as percent-encoded UTF-8 (decodeURIComponent undoes it). */
export function encodeEventIdHeader(eventId: string): string {
  return encodeURIComponent(eventId);
}

/**
 * `id` is the `webhook-id` header value (ASCII: see webhookIdFor); `body` the exact bytes sent; `secret`
 * one secret, or several during a rotation's grace period (current first).
 */
export type SignInput = { id: string; timestamp: Date; body: string | Uint8Array; secret: string | readonly string[] };

const SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

/**
 * The Standard Webhooks headers for one message: `webhook-id`, `webhook-timestamp` (unix seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the base64-decoded part
 * of a `whsec_<base64>` secret; with several secrets, one `v1,…` per secret separated by spaces (the
 * spec's list: a receiver accepts the message when any of them verifies). The HMAC runs over the body's
 * bytes as they are (a string is UTF-8), not over a decoded copy, so a body that is not UTF-8 is signed
 * as sent; the standardwebhooks package's own `sign` decodes a Buffer to a string first and would sign
 * other bytes. Throws on a secret not in that form, or an id that is not a header-safe token.
 */
export function signWebhook(input: SignInput): Record<string, string> {
  const secrets = typeof input.secret === "string" ? [input.secret] : input.secret;
  if (secrets.length === 0 || !secrets.every((s) => SECRET_FORMAT.test(s))) {
    throw new Error("signing secret must be whsec_ followed by base64");
  }
  if (!PLAIN_ID.test(input.id)) throw new Error(`webhook-id must be a token without dots (see webhookIdFor), got ${JSON.stringify(input.id)}`);
  const timestamp = String(Math.floor(input.timestamp.getTime() / 1000));
  const body = typeof input.body === "string" ? Buffer.from(input.body, "utf8") : input.body;
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    return `v1,${createHmac("sha256", key).update(`${input.id}.${timestamp}.`, "utf8").update(body).digest("base64")}`;
  });
  return {
    "webhook-id": input.id,
    "webhook-timestamp": timestamp,
    "webhook-signature": signatures.join(" "),
  };
}

/** The headers of one replayed delivery (signed now); throws on a secret not `whsec_…`. */
export function replayHeaders(input: {
  eventId: string;
  replayId: string;
  contentType?: string;
  body: string | Uint8Array;
  secret: string | readonly string[];
  timestamp?: Date;
}): Record<string, string> {
  return {
    "content-type": input.contentType ?? "application/json",
    "user-agent": USER_AGENT,
    "keyward-replay-id": input.replayId,
    [EVENT_ID_HEADER]: encodeEventIdHeader(input.eventId),
    ...signWebhook({ id: webhookIdFor(input.eventId), timestamp: input.timestamp ?? new Date(), body: input.body, secret: input.secret }),
  };
}

export type DeliverInput = {
  url: string;
  /** The event id: its webhook-id (webhookIdFor) is the receiver's dedup key; sent in full as keyward-event-id. */
  id: string;
  /** The original payload, sent byte for byte and signed as such (a string is sent as UTF-8). */
  body: string | Uint8Array;
  /** The Content-Type sent (default application/json). */
  contentType?: string;
  /** The signing secret, or the current and the previous one during a rotation's grace period. */
  secret: string | readonly string[];
  replayId: string;
  timeoutMs?: number;
  signal?: AbortSignal;
};

export type DeliverResult = {
  ok: boolean;
  status: number | null;
  error: string | null;
  retryable: boolean;
  /** What a broker answered (deliverAmqp: the confirm, a return), as the attempt's evidence; HTTP keeps its own. */
  answer?: { fields: [string, string | number | boolean | null | undefined][]; sentence: string };
};

/** One signed POST of `body` to `url` (send-http.ts classifies the outcome); never throws, never follows a redirect. */
export async function deliverOnce(input: DeliverInput): Promise<DeliverResult> {
  const body = typeof input.body === "string" ? Buffer.from(input.body, "utf8") : input.body;
  let headers: Record<string, string>;
  try {
    headers = replayHeaders({ eventId: input.id, replayId: input.replayId, contentType: input.contentType, body, secret: input.secret });
  } catch (err) {
    // A bad URL is named before a bad secret, as the sender would.
    try {
      new URL(input.url);
    } catch {
      return { ok: false, status: null, error: `destination is not a valid URL: ${input.url}`, retryable: false };
    }
    return { ok: false, status: null, error: (err as Error).message, retryable: false };
  }
  const timeout = withTimeout(input.signal, input.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  try {
    const item = { replayId: input.replayId, deadLetterId: "", eventId: input.id, attempt: 1 };
    const r = await senderFor(input.url)(item, input.url, headers, body, timeout.signal);
    return { ok: r.ok, status: r.status, error: r.error, retryable: r.retryable };
  } finally {
    timeout.clear();
  }
}
