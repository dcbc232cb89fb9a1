/**
 * `keyward/client/express`: an Express (4, 5) or Connect middleware that processes each event once — the
 * same run as withIdempotency (claim with a lease kept alive while the route runs, complete or release,
 * duplicates answered with the first run's saved response), for handlers written as `(req, res)`:
 *
 *   app.post("/webhooks/stripe", express.raw({ type: "*\/*" }),
 *     idempotency({ client, source: "stripe", eventId: (req) => req.header("webhook-id") }),
 *     async (req, res) => { const { signal } = idempotencyOf(req)!; …; res.json({ ok: true }); });
 *
 * The route's response is held until the run is settled (so a run whose lease was lost answers 503, never
 * its success): `res.write`/`res.end`/`res.writeHead` are buffered and sent once `complete` is confirmed,
 * with the headers the route set. A route that streams a long response should not be wrapped. A 5xx
 * answer (Express's error handler included) releases the claim so the next delivery runs it.
 *
 * Typed against node:http alone: no dependency on Express or its types.
 */
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { ClaimResult } from "./client";
import { fromBase64, sha256Hex } from "./bytes";
import { canonicalJson } from "./payload-hash";
import { beginRun, IdempotencyError, reportTo, type Begun, type IdempotencyInfo, type RunOptions } from "./run";
import { DEFAULT_MAX_RESULT_BYTES, DEFAULT_RESULT_HEADERS, REPLAYED_HEADER } from "./with-idempotency";

/** A request as Express or a body parser leaves it: `body` is what express.json()/raw()/text() parsed, if any. */
export type NodeRequest = IncomingMessage & { body?: unknown };
type Next = (err?: unknown) => void;

export type IdempotencyMiddlewareOptions<Req extends NodeRequest = NodeRequest> = RunOptions & {
  /** The sender's event id (a header, or a field of the parsed body). */
  eventId: (req: Req) => string | undefined | Promise<string | undefined>;
  /** The event type stored with the key (default "event"). */
  eventType?: string | ((req: Req) => string | Promise<string>);
  /**
   * `"body"`: SHA-256 of the raw body (`req.body` a Buffer or string: express.raw() or express.text());
   * `"json"`: of the body's canonical JSON (a parsed `req.body`, or raw bytes parsed); or a function answering
   * the hash. README "Payload hashes".
   */
  payloadHash?: "body" | "json" | ((req: Req) => string | Promise<string>);
  /** The response headers saved with a result (default: content-type). */
  resultHeaders?: readonly string[];
  /** A larger response body is not saved (default 64 KiB). */
  maxResultBytes?: number;
  /** Answers a duplicate whose first run saved no result (default 200 `{"received":true}`). */
  duplicateResponse?: (res: ServerResponse, duplicate: { source: string; eventId: string; claim: ClaimResult }) => void;
};

const INFO = Symbol.for("keyward.idempotency");

/** The run's IdempotencyInfo (signal, claim token, …) inside a route the middleware wraps. */
export function idempotencyOf(req: IncomingMessage): IdempotencyInfo | undefined {
  return (req as unknown as Record<symbol, IdempotencyInfo | undefined>)[INFO];
}

/** The middleware: generic in the request, so Express types the route's own `req` as usual after it. */
export type IdempotencyMiddleware<Req extends NodeRequest> = <R extends Req>(req: R, res: ServerResponse, next: Next) => void;

export function idempotency<Req extends NodeRequest = NodeRequest>(options: IdempotencyMiddlewareOptions<Req>): IdempotencyMiddleware<Req> {
  const report = reportTo(options);
  return (req, res, next) => {
    void (async () => {
      let event: { eventId: string; eventType: string; payloadHash?: string };
      try {
        event = await readEvent(req, options);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        return sendJson(res, 400, { error: { code: "invalid_event", message: `could not read the event from the request: ${message}` } });
      }
      const begun = await beginRun(options, event);
      if (begun.kind !== "claimed") return answerNotClaimed(res, begun, options);
      const { run } = begun;
      (req as unknown as Record<symbol, IdempotencyInfo>)[INFO] = run.info;

      holdResponse(res, async (held) => {
        if (held.status >= 500) {
          await run.release();
          return held.send();
        }
        const lostBefore = run.lost();
        if (lostBefore) return held.replace(503, leaseLostBody(lostBefore));
        let result: { status: number; headers: Record<string, string>; body: Uint8Array } | undefined;
        if (options.saveResult) {
          if (held.body.byteLength > (options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES)) {
            report(new RangeError(`the response body (${held.body.byteLength} bytes) is larger than maxResultBytes: not saved`), "result");
          } else {
            result = { status: held.status, headers: held.pick(options.resultHeaders ?? DEFAULT_RESULT_HEADERS), body: held.body };
          }
        }
        const completion = await run.complete(result);
        if (completion.kind === "lost") return held.replace(503, leaseLostBody(completion.error));
        if (completion.kind === "unconfirmed") report(completion.error, "complete");
        held.send();
      });
      next();
    })().catch((err) => next(err));
  };
}

async function readEvent<Req extends NodeRequest>(req: Req, options: IdempotencyMiddlewareOptions<Req>) {
  const eventId = await options.eventId(req);
  if (typeof eventId !== "string" || eventId === "") throw new IdempotencyError("invalid_event", "the request carries no event id");
  const eventType = (typeof options.eventType === "function" ? await options.eventType(req) : options.eventType) ?? "event";
  const how = options.payloadHash;
  let payloadHash: string | undefined;
  if (how === "body") {
    if (!(typeof req.body === "string" || req.body instanceof Uint8Array)) {
      throw new TypeError('payloadHash "body" needs the raw body: put express.raw() or express.text() before the middleware');
    }
    payloadHash = await sha256Hex(req.body);
  } else if (how === "json") {
    const body = req.body instanceof Uint8Array ? JSON.parse(new TextDecoder().decode(req.body)) : typeof req.body === "string" ? JSON.parse(req.body) : req.body;
    if (body === undefined) throw new TypeError('payloadHash "json" needs a body: put express.json() (or raw()) before the middleware');
    payloadHash = await sha256Hex(canonicalJson(body));
  } else if (typeof how === "function") {
    payloadHash = await how(req);
  }
  return { eventId, eventType, ...(payloadHash ? { payloadHash } : {}) };
}

function answerNotClaimed(res: ServerResponse, begun: Exclude<Begun, { kind: "claimed" }>, options: IdempotencyMiddlewareOptions<never>): void {
  switch (begun.kind) {
    case "duplicate": {
      if (begun.result) {
        res.statusCode = begun.result.status;
        for (const [name, value] of Object.entries(begun.result.headers)) res.setHeader(name, value);
        res.setHeader(REPLAYED_HEADER, "true");
        res.end(Buffer.from(fromBase64(begun.result.bodyBase64)));
        return;
      }
      if (options.duplicateResponse) return options.duplicateResponse(res, { source: options.source, eventId: begun.claim.eventId, claim: begun.claim });
      res.setHeader(REPLAYED_HEADER, "true");
      return sendJson(res, 200, { received: true });
    }
    case "in_flight":
      res.setHeader("retry-after", String(begun.error.retryAfterSeconds ?? 1));
      return sendJson(res, 409, { error: { code: "in_flight", message: begun.error.message, details: { leaseExpiresAt: begun.claim.leaseExpiresAt } } });
    case "payload_mismatch":
      return sendJson(res, 409, { error: { code: "payload_mismatch", message: begun.error.message } });
    case "unavailable":
      res.setHeader("retry-after", String(begun.error.retryAfterSeconds ?? 5));
      return sendJson(res, 503, { error: { code: "idempotency_unavailable", message: "the idempotency store is unreachable; deliver again later" } });
    case "refused":
      if (begun.invalid) return sendJson(res, 400, { error: { code: "invalid_event", message: begun.error.message, details: begun.error.details } });
      console.error("[keyward] claim refused:", begun.error);
      return sendJson(res, 500, { error: { code: "internal_error", message: "internal error" } });
  }
}

function leaseLostBody(reason: unknown) {
  const e = reason instanceof IdempotencyError ? reason : new IdempotencyError("lease_lost", String(reason));
  return { error: { code: e.code, message: `${e.message}; deliver again` } };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("content-length", Buffer.byteLength(text));
  res.end(text);
}

type Held = {
  status: number;
  body: Uint8Array;
  /** These response headers (lower-case names), as set by the route. */
  pick: (names: readonly string[]) => Record<string, string>;
  /** Sends the route's response as it made it. */
  send: () => void;
  /** Sends this error body instead (the route's headers dropped). */
  replace: (status: number, body: unknown) => void;
};

/**
 * Buffers what the route writes until `settle` decides what to send: res.writeHead/write/end are replaced
 * on this response only, and restored before sending.
 */
function holdResponse(res: ServerResponse, settle: (held: Held) => Promise<void>): void {
  const original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders };
  const chunks: Buffer[] = [];
  const toBuffer = (chunk: unknown, encoding?: unknown): Buffer =>
    Buffer.isBuffer(chunk) ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk) : Buffer.from(String(chunk), typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  const restore = () => Object.assign(res, original);
  let ended = false;

  res.flushHeaders = () => {};
  res.writeHead = function (status: number, ...rest: unknown[]) {
    res.statusCode = status;
    let headers = rest[0];
    if (typeof headers === "string") {
      res.statusMessage = headers;
      headers = rest[1];
    }
    if (Array.isArray(headers)) {
      for (let i = 0; i + 1 < headers.length; i += 2) res.setHeader(String(headers[i]), headers[i + 1] as OutgoingHttpHeader);
    } else if (headers) {
      for (const [name, value] of Object.entries(headers as OutgoingHttpHeaders)) if (value !== undefined) res.setHeader(name, value);
    }
    return res;
  } as typeof res.writeHead;
  res.write = function (chunk: unknown, encoding?: unknown, cb?: unknown) {
    if (chunk !== undefined && chunk !== null) chunks.push(toBuffer(chunk, encoding));
    const callback = typeof encoding === "function" ? encoding : cb;
    if (typeof callback === "function") queueMicrotask(() => (callback as () => void)());
    return true;
  } as typeof res.write;
  res.end = function (chunk?: unknown, encoding?: unknown, cb?: unknown) {
    if (ended) return res;
    ended = true;
    if (typeof chunk === "function") cb = chunk;
    else if (chunk !== undefined && chunk !== null) chunks.push(toBuffer(chunk, encoding));
    if (typeof encoding === "function") cb = encoding;
    const body = Buffer.concat(chunks);
    const held: Held = {
      status: res.statusCode,
      body,
      pick: (names) => {
        const out: Record<string, string> = {};
        for (const name of names) {
          const v = res.getHeader(name);
          if (v !== undefined) out[name.toLowerCase()] = Array.isArray(v) ? v.join(", ") : String(v);
        }
        return out;
      },
      send: () => {
        restore();
        if (!res.headersSent && res.getHeader("content-length") !== undefined) res.setHeader("content-length", body.byteLength);
        res.end(body, typeof cb === "function" ? (cb as () => void) : undefined);
      },
      replace: (status, errorBody) => {
        restore();
        for (const name of res.getHeaderNames()) res.removeHeader(name);
        res.setHeader("retry-after", "1");
        sendJson(res, status, errorBody);
      },
    };
    settle(held).catch((err) => {
      console.error("[keyward] could not settle the run:", err);
      held.replace(500, { error: { code: "internal_error", message: "internal error" } });
    });
    return res;
  } as typeof res.end;
}
