/**
 * `keyward/client/fastify`: a Fastify (5) plugin that processes each event once — the same run as
 * withIdempotency (claim with a lease kept alive while the route runs, complete or release, duplicates
 * answered with the first run's saved response), for every route of the scope it is registered in:
 *
 *   app.register(async (hooks) => {
 *     await hooks.register(keywardIdempotency, { client, source: "stripe", eventId: (req) => req.headers["webhook-id"] as string });
 *     hooks.post("/webhooks/stripe", async (req) => { const { signal } = idempotencyOf(req)!; …; return { ok: true }; });
 *   });
 *
 * A preHandler hook claims (a duplicate, in-flight, mismatched or unreadable event is answered there and
 * the route does not run); an onSend hook settles the run with the route's answer (Fastify's error replies
 * included: a 5xx releases the claim) before it is sent, so a run whose lease was lost answers 503, never
 * its success. The plugin is not encapsulated (like fastify-plugin's skip-override): its hooks apply to the
 * scope that registers it.
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import type { ClaimResult } from "./client";
import { fromBase64, sha256Hex } from "./bytes";
import { canonicalJson } from "./payload-hash";
import { beginRun, IdempotencyError, reportTo, type ClaimedRun, type IdempotencyInfo, type RunOptions } from "./run";
import { DEFAULT_MAX_RESULT_BYTES, DEFAULT_RESULT_HEADERS, REPLAYED_HEADER } from "./with-idempotency";

export type FastifyIdempotencyOptions = RunOptions & {
  /** The sender's event id (a header, or a field of the parsed body). */
  eventId: (request: FastifyRequest) => string | undefined | Promise<string | undefined>;
  /** The event type stored with the key (default "event"). */
  eventType?: string | ((request: FastifyRequest) => string | Promise<string>);
  /**
   * `"json"`: SHA-256 of the parsed body's canonical JSON; `"body"`: of the raw body (a Buffer or string body,
   * e.g. with a content-type parser `parseAs: "buffer"`); or a function answering the hash. README "Payload hashes".
   */
  payloadHash?: "body" | "json" | ((request: FastifyRequest) => string | Promise<string>);
  /** The response headers saved with a result (default: content-type). */
  resultHeaders?: readonly string[];
  /** A larger response body is not saved (default 64 KiB). */
  maxResultBytes?: number;
  /** Answers a duplicate whose first run saved no result (default 200 `{"received":true}`). */
  duplicateResponse?: (reply: FastifyReply, duplicate: { source: string; eventId: string; claim: ClaimResult }) => FastifyReply;
};

const runs = new WeakMap<FastifyRequest, ClaimedRun>();

/** The run's IdempotencyInfo (signal, claim token, …) inside a route of the plugin's scope. */
export function idempotencyOf(request: FastifyRequest): IdempotencyInfo | undefined {
  return runs.get(request)?.info;
}

const plugin: FastifyPluginCallback<FastifyIdempotencyOptions> = (app, options, done) => {
  const report = reportTo(options);

  app.addHook("preHandler", async (request, reply) => {
    let event: { eventId: string; eventType: string; payloadHash?: string };
    try {
      event = await readEvent(request, options);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return reply.code(400).send({ error: { code: "invalid_event", message: `could not read the event from the request: ${message}` } });
    }
    const begun = await beginRun(options, event);
    switch (begun.kind) {
      case "claimed":
        runs.set(request, begun.run);
        return;
      case "duplicate":
        if (begun.result) {
          return reply
            .code(begun.result.status)
            .headers({ ...begun.result.headers, [REPLAYED_HEADER]: "true" })
            .send(Buffer.from(fromBase64(begun.result.bodyBase64)));
        }
        if (options.duplicateResponse) return options.duplicateResponse(reply, { source: options.source, eventId: event.eventId, claim: begun.claim });
        return reply.header(REPLAYED_HEADER, "true").send({ received: true });
      case "in_flight":
        return reply
          .code(409)
          .header("retry-after", String(begun.error.retryAfterSeconds ?? 1))
          .send({ error: { code: "in_flight", message: begun.error.message, details: { leaseExpiresAt: begun.claim.leaseExpiresAt } } });
      case "payload_mismatch":
        return reply.code(409).send({ error: { code: "payload_mismatch", message: begun.error.message } });
      case "unavailable":
        return reply
          .code(503)
          .header("retry-after", String(begun.error.retryAfterSeconds ?? 5))
          .send({ error: { code: "idempotency_unavailable", message: "the idempotency store is unreachable; deliver again later" } });
      case "refused":
        if (begun.invalid) return reply.code(400).send({ error: { code: "invalid_event", message: begun.error.message, details: begun.error.details } });
        request.log.error({ err: begun.error }, "[keyward] claim refused");
        return reply.code(500).send({ error: { code: "internal_error", message: "internal error" } });
    }
  });

  app.addHook("onSend", async (request, reply, payload) => {
    const run = runs.get(request);
    if (!run) return payload;
    runs.delete(request);
    if (reply.statusCode >= 500) {
      await run.release();
      return payload;
    }
    const lostBefore = run.lost();
    if (lostBefore) return leaseLost(reply, lostBefore);
    let result: { status: number; headers: Record<string, string>; body: Uint8Array } | undefined;
    if (options.saveResult) {
      const body = typeof payload === "string" ? Buffer.from(payload) : payload instanceof Uint8Array ? payload : payload == null ? Buffer.alloc(0) : undefined;
      if (!body) report(new TypeError("a streamed response is not saved"), "result");
      else if (body.byteLength > (options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES)) {
        report(new RangeError(`the response body (${body.byteLength} bytes) is larger than maxResultBytes: not saved`), "result");
      } else {
        const headers: Record<string, string> = {};
        for (const name of options.resultHeaders ?? DEFAULT_RESULT_HEADERS) {
          const v = reply.getHeader(name);
          if (v !== undefined) headers[name.toLowerCase()] = Array.isArray(v) ? v.join(", ") : String(v);
        }
        result = { status: reply.statusCode, headers, body };
      }
    }
    const completion = await run.complete(result);
    if (completion.kind === "lost") return leaseLost(reply, completion.error);
    if (completion.kind === "unconfirmed") report(completion.error, "complete");
    return payload;
  });

  done();
};

/** Not encapsulated: the hooks apply to the scope that registers the plugin (what fastify-plugin marks so). */
export const keywardIdempotency = Object.assign(plugin, {
  [Symbol.for("skip-override")]: true,
  [Symbol.for("fastify.display-name")]: "keyward-idempotency",
});

async function readEvent(request: FastifyRequest, options: FastifyIdempotencyOptions) {
  const eventId = await options.eventId(request);
  if (typeof eventId !== "string" || eventId === "") throw new IdempotencyError("invalid_event", "the request carries no event id");
  const eventType = (typeof options.eventType === "function" ? await options.eventType(request) : options.eventType) ?? "event";
  const how = options.payloadHash;
  const body = request.body;
  let payloadHash: string | undefined;
  if (how === "body") {
    if (!(typeof body === "string" || body instanceof Uint8Array)) throw new TypeError('payloadHash "body" needs the raw body (a content-type parser with parseAs "buffer")');
    payloadHash = await sha256Hex(body);
  } else if (how === "json") {
    if (body === undefined) throw new TypeError('payloadHash "json" needs a body');
    payloadHash = await sha256Hex(canonicalJson(body instanceof Uint8Array ? JSON.parse(new TextDecoder().decode(body)) : body));
  } else if (typeof how === "function") {
    payloadHash = await how(request);
  }
  return { eventId, eventType, ...(payloadHash ? { payloadHash } : {}) };
}

function leaseLost(reply: FastifyReply, reason: unknown): string {
  const e = reason instanceof IdempotencyError ? reason : new IdempotencyError("lease_lost", String(reason));
  reply.code(503).header("retry-after", "1").header("content-type", "application/json; charset=utf-8");
  return JSON.stringify({ error: { code: e.code, message: `${e.message}; deliver again` } });
}
