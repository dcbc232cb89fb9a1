/**
 * `withIdempotency(handler, options)`: a Web-standard `(Request) => Promise<Response>` handler (Next route
 * handlers, Hono, Bun, Deno; Node through ./node.ts) that processes each event once.
 *
 *   claim (with a lease, kept alive while the handler runs: run.ts)
 *     → claimed:   run the handler with `info.signal`; then complete (2xx–4xx answer, saving it when
 *                  `saveResult`) and answer it, or release (5xx answer, or it threw: the error is rethrown)
 *                  so the sender's next delivery is processed. A lost lease answers 503 lease_lost instead of
 *                  the handler's answer: never a success for a run that did not keep the event;
 *     → duplicate: the first run's saved response, byte for byte (+ `Idempotent-Replayed: true`), or a
 *                  neutral 200 `{"received":true}` when it saved none (`duplicateResponse` to choose another);
 *     → in_flight: 409 + Retry-After (another delivery is running it now);
 *     → payload_mismatch: 409 (only with `payloadHash`).
 * Keyward unreachable (after the client's retries) → 503 + Retry-After: the sender delivers again later. An
 * event whose id, type or payload hash cannot be read (a malformed body) → 400 invalid_event, as does an id
 * Keyward refuses; the handler does not run. An unknown source, a refused API key or any other field Keyward
 * refuses (source name, lease) → 500 (a configuration fault: the sender keeps the event), logged.
 *
 * `eventId`, `eventType` and `payloadHash` read clones of the request, so the handler still gets the whole body.
 */
import type { ClaimResult, SavedResult } from "./client";
import { fromBase64, sha256Hex } from "./bytes";
import { canonicalJson } from "./payload-hash";
import { beginRun, IdempotencyError, reportTo, type Begun, type IdempotencyInfo, type RunOptions } from "./run";

export type { IdempotencyInfo };

export type IdempotentHandler = (req: Request, info: IdempotencyInfo) => Response | Promise<Response>;

type FromRequest<T> = T | ((req: Request) => T | Promise<T>);

/** A duplicate delivery whose first run saved no result. */
export type DuplicateInfo = { source: string; eventId: string; claim: ClaimResult };

export type WithIdempotencyOptions = RunOptions & {
  /** The sender's event id, from a header or the body (given a clone of the request). */
  eventId: (req: Request) => string | Promise<string>;
  /** The event type stored with the key (default "event"). */
  eventType?: FromRequest<string>;
  /**
   * The payload hash a redelivery must match (409 payload_mismatch otherwise): `"body"` hashes the raw body
   * bytes, `"json"` the body's canonical JSON (so re-serialised JSON still matches), or a function answering
   * a SHA-256 (64 hex). README "Payload hashes".
   */
  payloadHash?: "body" | "json" | ((req: Request) => string | Promise<string>);
  /** The response headers saved with a result (default: content-type). */
  resultHeaders?: readonly string[];
  /** A larger response body is not saved (the run completes without it; default 64 KiB, the server's default limit). */
  maxResultBytes?: number;
  /** The answer to a duplicate whose first run saved no result (default 200 `{"received":true}`). */
  duplicateResponse?: (duplicate: DuplicateInfo) => Response | Promise<Response>;
  /** The answer when the event id, type or payload hash cannot be read (default 400 invalid_event). */
  invalidEventResponse?: (err: unknown) => Response | Promise<Response>;
};

export const DEFAULT_RESULT_HEADERS = ["content-type"] as const;
export const DEFAULT_MAX_RESULT_BYTES = 65536;
/** Marks an answer that was not produced by running the handler (the name Stripe uses). */
export const REPLAYED_HEADER = "idempotent-replayed";
const NULL_BODY_STATUS = new Set([101, 103, 204, 205, 304]);

export function withIdempotency(handler: IdempotentHandler, options: WithIdempotencyOptions): (req: Request) => Promise<Response> {
  const report = reportTo(options);
  return async (req: Request): Promise<Response> => {
    let event: { eventId: string; eventType: string; payloadHash?: string };
    try {
      event = await readEvent(req, options);
    } catch (err) {
      return options.invalidEventResponse ? options.invalidEventResponse(err) : invalidEvent(err);
    }
    const begun = await beginRun(options, event);
    if (begun.kind !== "claimed") return notClaimedResponse(begun, options);
    const { run } = begun;

    let response: Response;
    try {
      response = await handler(req, run.info);
    } catch (err) {
      const lost = run.lost();
      if (lost) return leaseLost(lost);
      await run.release();
      // It stopped because its lease could not be kept: a retryable answer, not the handler's error.
      if (run.info.signal.aborted) return leaseLost(run.info.signal.reason);
      throw err;
    }
    if (response.status >= 500) {
      await run.release();
      return response;
    }
    const lost = run.lost();
    if (lost) return leaseLost(lost);

    let answer = response;
    let toSave: { status: number; headers: Record<string, string>; body: Uint8Array } | undefined;
    // The body read fails (its stream errored, or the handler had read it): no result to save; the run still completes.
    const body = options.saveResult ? await response.arrayBuffer().then((b) => new Uint8Array(b), (err: unknown) => (report(err, "result"), null)) : null;
    if (body) {
      answer = new Response(NULL_BODY_STATUS.has(response.status) ? null : body, response);
      if (body.byteLength > (options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES)) {
        report(new RangeError(`the response body (${body.byteLength} bytes) is larger than maxResultBytes: not saved`), "result");
      } else {
        toSave = { status: response.status, headers: pickHeaders(response.headers, options.resultHeaders ?? DEFAULT_RESULT_HEADERS), body };
      }
    }
    const completion = await run.complete(toSave);
    if (completion.kind === "lost") return leaseLost(completion.error);
    // Not confirmed before the lease ended: the work is done, the answer stands (README "What remains").
    if (completion.kind === "unconfirmed") report(completion.error, "complete");
    return answer;
  };
}

async function readEvent(req: Request, options: WithIdempotencyOptions): Promise<{ eventId: string; eventType: string; payloadHash?: string }> {
  const eventId = await options.eventId(req.clone());
  if (typeof eventId !== "string" || eventId === "") throw new IdempotencyError("invalid_event", "the request carries no event id");
  const eventType = (typeof options.eventType === "function" ? await options.eventType(req.clone()) : options.eventType) ?? "event";
  const how = options.payloadHash;
  let payloadHash: string | undefined;
  if (how === "body") payloadHash = await sha256Hex(await req.clone().arrayBuffer());
  else if (how === "json") payloadHash = await sha256Hex(canonicalJson(JSON.parse(await req.clone().text())));
  else if (typeof how === "function") payloadHash = await how(req.clone());
  return { eventId, eventType, ...(payloadHash ? { payloadHash } : {}) };
}

/** The answer to every claim outcome but `claimed`, shared by the Web-standard wrappers. */
export async function notClaimedResponse(
  begun: Exclude<Begun, { kind: "claimed" }>,
  options: Pick<WithIdempotencyOptions, "source" | "duplicateResponse">,
): Promise<Response> {
  switch (begun.kind) {
    case "duplicate":
      if (begun.result) return savedResponse(begun.result);
      if (options.duplicateResponse) return options.duplicateResponse({ source: options.source, eventId: begun.claim.eventId, claim: begun.claim });
      return Response.json({ received: true }, { headers: { [REPLAYED_HEADER]: "true" } });
    case "in_flight":
      return errorResponse(409, begun.error.code, begun.error.message, {
        details: { leaseExpiresAt: begun.claim.leaseExpiresAt },
        retryAfter: begun.error.retryAfterSeconds,
      });
    case "payload_mismatch":
      return errorResponse(409, begun.error.code, begun.error.message);
    case "unavailable":
      return errorResponse(503, "idempotency_unavailable", "the idempotency store is unreachable; deliver again later", {
        retryAfter: begun.error.retryAfterSeconds ?? 5,
      });
    case "refused":
      if (begun.invalid) return errorResponse(400, "invalid_event", begun.error.message, { details: begun.error.details });
      // An unknown source, a refused API key or field is a configuration fault: 500, so the sender keeps the event.
      console.error("[keyward] claim refused:", begun.error);
      return errorResponse(500, "internal_error", "internal error");
  }
}

/** A saved result as the response it was, plus Idempotent-Replayed. */
export function savedResponse(saved: SavedResult): Response {
  const headers = new Headers(saved.headers);
  headers.set(REPLAYED_HEADER, "true");
  return new Response(NULL_BODY_STATUS.has(saved.status) ? null : fromBase64(saved.bodyBase64), { status: saved.status, headers });
}

/** The answer of a run whose lease was lost: retryable, never the handler's success. */
export function leaseLost(reason: unknown): Response {
  const e = reason instanceof IdempotencyError ? reason : new IdempotencyError("lease_lost", String(reason));
  return errorResponse(503, e.code, `${e.message}; deliver again`, { retryAfter: 1 });
}

function invalidEvent(err: unknown): Response {
  const message = err instanceof Error ? err.message : String(err);
  return errorResponse(400, "invalid_event", `could not read the event from the request: ${message}`);
}

function pickHeaders(headers: Headers, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const v = headers.get(name);
    if (v !== null) out[name.toLowerCase()] = v;
  }
  return out;
}

function errorResponse(status: number, code: string, message: string, o: { details?: unknown; retryAfter?: number } = {}): Response {
  return Response.json(
    { error: { code, message, ...(o.details === undefined ? {} : { details: o.details }) } },
    { status, headers: o.retryAfter === undefined ? {} : { "retry-after": String(o.retryAfter) } },
  );
}
