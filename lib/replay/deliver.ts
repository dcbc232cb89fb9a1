/**
 * Delivery of one replayed event to a source's destination: Standard Webhooks signing and one HTTP POST
 * with a clear outcome. The executor (drive.ts) decides what to send and when; this module only signs,
 * sends and classifies. Retries are spaced by backoff.ts, the rate is limited by rate-limiter.ts.
 *
 * Outcome classification of `deliverOnce` (the executor retries only `retryable` failures, up to its
 * attempt limit):
 *   - 2xx                                    → ok
 *   - network error, timeout, 408, 429, 5xx  → failed, retryable (the destination may accept it later)
 *   - other 4xx                              → failed, not retryable (the destination rejects this request
 *                                              as such: bad signature, unknown route, invalid payload…)
 *   - 3xx                                    → failed, not retryable: redirects are never followed, so a
 *                                              signed payload never travels to an origin nobody configured;
 *                                              the error names the Location so the operator can fix the URL
 *   - 1xx/other, bad URL, bad secret         → failed, not retryable
 *   - the caller's `signal` aborts           → failed, retryable, error "aborted" (pause/cancel/shutdown:
 *                                              the item was not delivered, the executor decides what next)
 * Only the first RESPONSE_BODY_CAP bytes of a response are read (for the error text); the rest is
 * discarded, so a destination answering megabytes costs nothing.
 */
import { createHash, createHmac } from "node:crypto";

export const USER_AGENT = "Keyward-Replay/1.0 (webhook re-drive)";
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Bytes of a response body read at most, for the error text of a failed delivery. */
export const RESPONSE_BODY_CAP = 4096;
/** Longest error string returned (the response excerpt is trimmed to fit). */
export const MAX_ERROR_LENGTH = 300;
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

export type DeliverResult = { ok: boolean; status: number | null; error: string | null; retryable: boolean };

const fail = (status: number | null, error: string, retryable: boolean): DeliverResult => ({
  ok: false,
  status,
  error: error.length > MAX_ERROR_LENGTH ? `${error.slice(0, MAX_ERROR_LENGTH - 1)}…` : error,
  retryable,
});

/** Whether a non-2xx status is worth another attempt (see the header). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/** One signed POST of `body` to `url`; never throws, never follows a redirect. */
export async function deliverOnce(input: DeliverInput): Promise<DeliverResult> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    return fail(null, `destination is not a valid URL: ${input.url}`, false);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail(null, `destination must be an http or https URL, not ${url.protocol}`, false);
  }
  let signed: Record<string, string>;
  try {
    signed = signWebhook({ id: webhookIdFor(input.id), timestamp: new Date(), body: input.body, secret: input.secret });
  } catch (err) {
    return fail(null, (err as Error).message, false);
  }
  if (input.signal?.aborted) return fail(null, "aborted", true);

  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort();
  input.signal?.addEventListener("abort", onAbort, { once: true });
  const interrupted = () => (timedOut ? fail(null, `no response within ${timeoutMs} ms`, true) : fail(null, "aborted", true));
  try {
    let res: Response;
    try {
      res = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": input.contentType ?? "application/json",
          "user-agent": USER_AGENT,
          "keyward-replay-id": input.replayId,
          [EVENT_ID_HEADER]: encodeEventIdHeader(input.id),
          ...signed,
        },
        // Bytes from Buffer/pg are backed by an ordinary ArrayBuffer; the DOM typing wants that stated.
        body: input.body as string | Uint8Array<ArrayBuffer>,
        redirect: "manual",
        signal: controller.signal,
      });
    } catch (err) {
      if (controller.signal.aborted) return interrupted();
      return fail(null, networkError(err, url), true);
    }
    const status = res.status;
    if (status >= 200 && status <= 299) {
      await discard(res);
      return { ok: true, status, error: null, retryable: false };
    }
    let excerpt: string;
    try {
      excerpt = await readCapped(res, RESPONSE_BODY_CAP);
    } catch {
      if (controller.signal.aborted) return interrupted();
      excerpt = "";
    }
    const statusText = res.statusText ? ` ${res.statusText}` : "";
    if (status >= 300 && status <= 399) {
      const location = res.headers.get("location");
      const where = location ? ` to ${new URL(location, url).href}` : "";
      return fail(status, `HTTP ${status}${statusText}: redirect${where} not followed; set the replay destination to the final URL`, false);
    }
    const detail = excerpt ? `: ${excerpt}` : "";
    return fail(status, `HTTP ${status}${statusText}${detail}`, isRetryableStatus(status));
  } finally {
    clearTimeout(timer);
    input.signal?.removeEventListener("abort", onAbort);
  }
}

/** A short, readable reason for a fetch that failed before any response (connection refused, DNS…). */
function networkError(err: unknown, url: URL): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code;
  const host = url.host;
  switch (code) {
    case "ECONNREFUSED":
      return `connection refused by ${host}`;
    case "ECONNRESET":
    case "UND_ERR_SOCKET":
      return `connection to ${host} closed before a response`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `host not found: ${url.hostname}`;
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return `could not connect to ${host} (timeout)`;
    default: {
      const message = cause?.message ?? (err as Error)?.message ?? String(err);
      return `network error reaching ${host}: ${message}${code ? ` (${code})` : ""}`;
    }
  }
}

/** Reads at most `cap` bytes of the body as text (whitespace collapsed), then cancels the rest. */
async function readCapped(res: Response, cap: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < cap) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const bytes = Buffer.concat(chunks).subarray(0, cap);
  return bytes.toString("utf8").replace(/\s+/g, " ").trim();
}

/** Drops a response body without reading it (frees the connection). */
async function discard(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => undefined);
}
