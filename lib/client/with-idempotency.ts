/**
 * `withIdempotency(handler, options)`: a Web-standard `(Request) => Promise<Response>` handler (Next route
 * handlers, Hono, Bun, Deno; Node through ./node.ts) that processes each event once.
 *
 *   claim (with a lease) → claimed:   run the handler, then complete (2xx–4xx answer) or release (5xx
 *                                      answer, or it threw: the error is rethrown), so the sender's next
 *                                      delivery is processed;
 *                        → duplicate: 200 without running the handler (done before);
 *                        → in_flight: 409 + Retry-After (another delivery is running it now);
 *                        → payload_mismatch: 409 (only with `payloadHash`).
 * Keyward unreachable (after the client's retries) → 503 + Retry-After: the sender delivers again later,
 * and that delivery's claim settles it. An event id Keyward refuses (422) → 400.
 *
 * `eventId` (and `payloadHash`) read a clone of the request, so the handler still gets the whole body.
 */
import { KeywardApiError, type ClaimResult, type KeywardClient } from "./client";

export type IdempotencyInfo = {
  source: string;
  eventId: string;
  /** The token that completes or releases this claim (the wrapper does both). */
  claimToken: string;
  /** The whole claim answer (claimKind tells a first claim from a lease takeover). */
  claim: ClaimResult;
};

export type IdempotentHandler = (req: Request, info: IdempotencyInfo) => Response | Promise<Response>;

type FromRequest<T> = T | ((req: Request) => T | Promise<T>);

export type WithIdempotencyOptions = {
  client: KeywardClient;
  source: string;
  /** The sender's event id, from a header or the body (given a clone of the request). */
  eventId: (req: Request) => string | Promise<string>;
  /** The event type stored with the key (default "event"). */
  eventType?: FromRequest<string>;
  /** How long a claim holds the key while the handler runs (default 300 s); a crashed run frees it after this. */
  leaseSeconds?: number;
  /** SHA-256 (hex) of the payload: a redelivery with other content answers 409 payload_mismatch. */
  payloadHash?: FromRequest<string>;
  /** Told about a failure to complete or release after the handler ran (default: console.error). */
  onError?: (err: unknown, phase: "complete" | "release") => void;
};

export function withIdempotency(handler: IdempotentHandler, options: WithIdempotencyOptions): (req: Request) => Promise<Response> {
  const { client, source } = options;
  const leaseSeconds = options.leaseSeconds ?? 300;
  const onError = options.onError ?? ((err, phase) => console.error(`[keyward] ${phase} failed:`, err));

  return async (req: Request): Promise<Response> => {
    const eventId = await options.eventId(req.clone());
    const eventType = (await resolve(options.eventType, req)) ?? "event";
    const payloadHash = await resolve(options.payloadHash, req);

    let claim: ClaimResult;
    try {
      claim = await client.claim({ source, eventId, eventType, leaseSeconds, ...(payloadHash ? { payloadHash } : {}) });
    } catch (err) {
      return claimFailed(err);
    }

    switch (claim.outcome) {
      case "duplicate":
        return Response.json({ outcome: "duplicate", source, eventId, status: claim.status, duplicateCount: claim.duplicateCount });
      case "in_flight":
        return Response.json(
          { error: { code: "in_flight", message: `event ${source}/${eventId} is being processed by another delivery`, details: { leaseExpiresAt: claim.leaseExpiresAt } } },
          { status: 409, headers: { "retry-after": String(secondsUntil(claim.leaseExpiresAt)) } },
        );
      case "payload_mismatch":
        return Response.json(
          { error: { code: "payload_mismatch", message: `event ${source}/${eventId} was first received with another payload` } },
          { status: 409 },
        );
    }

    const claimToken = claim.claimToken!;
    const settle = async (phase: "complete" | "release") => {
      try {
        if (phase === "complete") await client.complete({ source, eventId, claimToken });
        else await client.release({ source, eventId, claimToken });
      } catch (err) {
        onError(err, phase);
      }
    };

    let response: Response;
    try {
      response = await handler(req, { source, eventId, claimToken, claim });
    } catch (err) {
      await settle("release");
      throw err;
    }
    await settle(response.status >= 500 ? "release" : "complete");
    return response;
  };
}

async function resolve<T>(v: FromRequest<T> | undefined, req: Request): Promise<T | undefined> {
  return typeof v === "function" ? (v as (req: Request) => T | Promise<T>)(req.clone()) : v;
}

function secondsUntil(iso: string | undefined): number {
  const ms = iso ? Date.parse(iso) - Date.now() : NaN;
  return Number.isFinite(ms) ? Math.max(1, Math.ceil(ms / 1000)) : 1;
}

function claimFailed(err: unknown): Response {
  if (err instanceof KeywardApiError && err.status === 422) {
    return Response.json({ error: { code: "invalid_event", message: err.message, details: err.details } }, { status: 400 });
  }
  if (err instanceof KeywardApiError && err.retryable) {
    return Response.json(
      { error: { code: "idempotency_unavailable", message: "the idempotency store is unreachable; deliver again later" } },
      { status: 503, headers: { "retry-after": String(err.retryAfterSeconds ?? 5) } },
    );
  }
  // A refused key or an unknown source is a configuration fault: 500, so the sender keeps the event.
  console.error("[keyward] claim refused:", err);
  return Response.json({ error: { code: "internal_error", message: "internal error" } }, { status: 500 });
}
