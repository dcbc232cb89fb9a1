/**
 * The HTTP sender (send.ts's SendOne): one POST of the body's bytes with the given headers, never
 * following a redirect, classified as send.ts describes. Only the first RESPONSE_BODY_CAP bytes of an
 * answer are read (the rest is discarded, so a destination answering megabytes, or an endless stream,
 * costs nothing): the first EVIDENCE_BODY_BYTES of them are kept as the attempt's evidence, and a failure's
 * error text quotes the start of them.
 */
import "server-only";
import http from "node:http";
import https from "node:https";
import type { SendItem, SendOne, SendResult } from "./send";
import { DeliveryTimeout } from "./send";
import { maskHeaders, pairsOf } from "./evidence";

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
  // eslint-disable-next-line no-control-regex -- NUL is what this finds: PostgreSQL text cannot hold it
  return new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(bytes, { stream: true }).replace(/\u0000/g, "\uFFFD");
}

const clip = (error: string) => (error.length > MAX_ERROR_LENGTH ? `${error.slice(0, MAX_ERROR_LENGTH - 1)}…` : error);

/**
 * Keep-alive agents shared by every replay: a connection to a destination is reused across items. Node's
 * http client, not fetch: fetch (undici) costs about four times the CPU per request here (measured:
 * ~0.7 ms against ~0.2 ms, server side included), which at 500 sends/s is a quarter of a core taken from
 * the claims the same server answers.
 */
const agents = { "http:": new http.Agent({ keepAlive: true }), "https:": new https.Agent({ keepAlive: true }) };

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

  let res: http.IncomingMessage;
  try {
    res = await request(url, headers, body, signal);
  } catch (err) {
    if (signal.aborted) return interrupted();
    if ((err as { code?: string }).code === "ERR_INVALID_CHAR" || (err as { code?: string }).code === "ERR_INVALID_HTTP_TOKEN") {
      return fail(null, `a header cannot be sent: ${(err as Error).message}`, false);
    }
    return fail(null, networkError(err, url), true);
  }
  const status = res.statusCode ?? 0;
  const read = await readCapped(res, RESPONSE_BODY_CAP);
  const responseBody = decodeExcerpt(read.bytes.subarray(0, EVIDENCE_BODY_BYTES));
  const responseHeaders = maskHeaders(pairsOf(res.rawHeaders));
  // A 2xx is delivered even when its body is cut short (by the timeout or our stop): the status said so.
  if (status >= 200 && status <= 299) return result({ ok: true, retryable: false, status, error: null, responseBody, responseHeaders });
  if (read.failed && signal.aborted) return interrupted();
  const statusText = res.statusMessage ? ` ${res.statusMessage}` : "";
  if (status >= 300 && status <= 399) {
    const location = res.headers.location;
    let where: string;
    try {
      where = location ? ` to ${new URL(location, url).href}` : "";
    } catch {
      where = ` to ${JSON.stringify(location)}`;
    }
    return { ...fail(status, `HTTP ${status}${statusText}: redirect${where} not followed; set the replay destination to the final URL`, false, responseBody), responseHeaders };
  }
  const excerpt = decodeExcerpt(read.bytes).replace(/\s+/g, " ").trim();
  return { ...fail(status, `HTTP ${status}${statusText}${excerpt ? `: ${excerpt}` : ""}`, isRetryableStatus(status), responseBody), responseHeaders };
};

/** One POST; resolves with the response once its head arrived (never follows a redirect); `signal` aborts it. */
function request(url: URL, headers: Record<string, string>, body: Uint8Array, signal: AbortSignal): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === "https:" ? https.request : http.request;
    const req = send(url, {
      method: "POST",
      headers: { ...headers, "content-length": String(body.byteLength) },
      agent: agents[url.protocol as "http:" | "https:"],
    });
    const onAbort = () => req.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    req.once("close", () => signal.removeEventListener("abort", onAbort));
    req.on("error", reject); // on, not once: a later error must find a listener too
    req.once("response", resolve);
    req.end(body);
  });
}

/** A short, readable reason for a request that failed before any response (connection refused, DNS…). */
function networkError(err: unknown, url: URL): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code;
  const host = url.host;
  switch (code) {
    case "ECONNREFUSED":
      return `connection refused by ${host}`;
    case "ECONNRESET":
    case "EPIPE":
    case "UND_ERR_SOCKET":
      return `connection to ${host} closed before a response`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `host not found: ${url.hostname}`;
    case "ETIMEDOUT":
    case "UND_ERR_CONNECT_TIMEOUT":
      return `could not connect to ${host} (timeout)`;
    default: {
      const message = e.cause?.message ?? e.message ?? String(err);
      return `network error reaching ${host}: ${message}${code ? ` (${code})` : ""}`;
    }
  }
}

/**
 * Reads at most `cap` bytes of the body (a longer one is cut off, its connection closed), or until the
 * answer ends or breaks; `failed`: it broke off before its end (what came is kept).
 */
function readCapped(res: http.IncomingMessage, cap: number): Promise<{ bytes: Buffer; failed: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (failed: boolean) => {
      if (done) return;
      done = true;
      resolve({ bytes: Buffer.concat(chunks).subarray(0, cap), failed });
    };
    res.on("data", (chunk: Buffer) => {
      if (done) return;
      chunks.push(chunk);
      size += chunk.length;
      if (size >= cap) {
        finish(false);
        res.destroy();
      }
    });
    res.once("end", () => finish(false));
    res.on("error", () => finish(true));
    res.once("close", () => finish(!res.complete));
  });
}
