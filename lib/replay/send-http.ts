/**
 * The HTTP sender (send.ts's SendOne): one POST of the body's bytes with the given headers, never
 * following a redirect, classified as send.ts describes. Only the first RESPONSE_BODY_CAP bytes of an
 * answer are read (the rest is discarded, so a destination answering megabytes, or an endless stream,
 * costs nothing): the first EVIDENCE_BODY_BYTES of them are kept as the attempt's evidence, and a failure's
 * error text quotes the start of them.
 */
import "server-only";
import type { SendItem, SendOne, SendResult } from "./send";
import { DeliveryTimeout } from "./send";

/** Bytes of a response body read at most. */
export const RESPONSE_BODY_CAP = 4096;
/** Bytes of a response body kept with each attempt (its evidence), as text. */
export const EVIDENCE_BODY_BYTES = 2048;
/** Longest error string returned (the response excerpt is trimmed to fit). */
export const MAX_ERROR_LENGTH = 300;

/** Whether a non-2xx status is worth another attempt (see send.ts). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * Bytes as storable text: UTF-8, invalid sequences as U+FFFD, an incomplete sequence cut off at the end
 * dropped (the bytes were cut at a cap), NUL as U+FFFD (PostgreSQL text and jsonb cannot hold it). Pure.
 */
export function decodeExcerpt(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes, { stream: true }).replace(/\u0000/g, "\uFFFD");
}

const clip = (error: string) => (error.length > MAX_ERROR_LENGTH ? `${error.slice(0, MAX_ERROR_LENGTH - 1)}…` : error);

export const sendHttp: SendOne = async (_item: SendItem, destination, headers, body, signal): Promise<SendResult> => {
  const started = performance.now();
  const result = (r: Omit<SendResult, "latencyMs" | "error"> & { error: string | null }): SendResult => ({
    ...r,
    error: r.error === null ? null : clip(r.error),
    latencyMs: Math.round(performance.now() - started),
  });
  const fail = (status: number | null, error: string, retryable: boolean, responseBody: string | null = null) =>
    result({ ok: false, retryable, status, error, responseBody });
  const interrupted = () =>
    signal.reason instanceof DeliveryTimeout ? fail(null, signal.reason.message, true) : fail(null, "aborted", true);

  let url: URL;
  try {
    url = new URL(destination);
  } catch {
    return fail(null, `destination is not a valid URL: ${destination}`, false);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return fail(null, `destination must be an http or https URL, not ${url.protocol}`, false);
  }
  if (signal.aborted) return interrupted();

  let res: Response;
  try {
    // Bytes from Buffer/pg are backed by an ordinary ArrayBuffer; the DOM typing wants that stated.
    res = await fetch(url, { method: "POST", headers, body: body as Uint8Array<ArrayBuffer>, redirect: "manual", signal });
  } catch (err) {
    if (signal.aborted) return interrupted();
    return fail(null, networkError(err, url), true);
  }
  const status = res.status;
  const read = await readCapped(res, RESPONSE_BODY_CAP);
  const responseBody = res.body ? decodeExcerpt(read.bytes.subarray(0, EVIDENCE_BODY_BYTES)) : null;
  // A 2xx is delivered even when its body is cut short (by the timeout or our stop): the status said so.
  if (status >= 200 && status <= 299) return result({ ok: true, retryable: false, status, error: null, responseBody });
  if (read.failed && signal.aborted) return interrupted();
  const bytes = read.bytes;
  const statusText = res.statusText ? ` ${res.statusText}` : "";
  if (status >= 300 && status <= 399) {
    const location = res.headers.get("location");
    let where = "";
    try {
      where = location ? ` to ${new URL(location, url).href}` : "";
    } catch {
      where = ` to ${JSON.stringify(location)}`;
    }
    return fail(status, `HTTP ${status}${statusText}: redirect${where} not followed; set the replay destination to the final URL`, false, responseBody);
  }
  const excerpt = decodeExcerpt(bytes).replace(/\s+/g, " ").trim();
  return fail(status, `HTTP ${status}${statusText}${excerpt ? `: ${excerpt}` : ""}`, isRetryableStatus(status), responseBody);
};

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

/** Reads at most `cap` bytes of the body, then cancels the rest; `failed`: the read broke off (what came is kept). */
async function readCapped(res: Response, cap: number): Promise<{ bytes: Buffer; failed: boolean }> {
  if (!res.body) return { bytes: Buffer.alloc(0), failed: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let failed = false;
  try {
    while (size < cap) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    failed = true;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return { bytes: Buffer.concat(chunks).subarray(0, cap), failed };
}
