/**
 * The claim endpoints, GET /metrics, /healthz, /readyz and the raw dead-letter intake served straight from
 * the Node HTTP server, before Next's router.
 *
 * Why: on this kind of machine Next's per-request routing costs ~1.3 ms and caps a process at ~600
 * requests/s even for a 401 that never touches the database (docs/benchmarks.md), while the claim
 * itself costs less. How: the handlers are the very ones Next serves (lib/claims/http.ts and
 * lib/metrics/http.ts, which the route files under app/ re-export), wrapped by the same `route()`; only
 * the dispatch differs, so authentication, validation, limits and error bodies are identical. Anything not matched here (other paths, methods)
 * goes to Next, which serves these same modules too; malformed paths and trailing slashes are answered
 * before either (api-edge.ts). The two claim routes first try the native lane (fast-claims.ts), which
 * answers well-formed claims without Web Request/Response objects and hands everything else to the
 * route module.
 */
import "server-only";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import {
  claimBatchHandler as claimBatch,
  claimHandler as claim,
  completeHandler as complete,
  extendHandler as extend,
  keyStateHandler as keyState,
  releaseHandler as release,
} from "@/lib/claims/http";
import { metricsHandler as metrics } from "@/lib/metrics/http";
import { rawIntakeHandler as rawDeadLetter } from "@/lib/deadletters/http";
import { healthzHandler as healthz, readyzHandler as readyz } from "@/lib/health/http";
import { observeClaimSeconds } from "@/lib/metrics/prometheus";
import { serveClaimNative, writeResponse, type Fallback } from "./fast-claims";

type Params = Record<string, string>;
type Handler = (req: Request, ctx: { params: Promise<Params> }) => Promise<Response>;
export type FastMatch = { handler: Handler; params: Params; timed?: "claim" | "batch" };

const POSTS: Record<string, Handler> = {
  "/api/v1/claims": claim,
  "/api/v1/claims/batch": claimBatch,
  "/api/v1/claims/complete": complete,
  "/api/v1/claims/extend": extend,
  "/api/v1/claims/release": release,
  // A raw body of up to KEYWARD_MAX_PAYLOAD_BYTES: streamed from the socket into the handler's one buffer.
  "/api/v1/dead-letters/raw": rawDeadLetter,
};

/** Claim routes whose answer time goes to the keyward_claim_duration_seconds histogram. */
const TIMED: Record<string, "claim" | "batch"> = { "/api/v1/claims": "claim", "/api/v1/claims/batch": "batch" };

const KEY_STATE = /^\/api\/v1\/claims\/([^/]+)\/([^/]+)$/;

/** The fast-path handler for this request, or null to let Next serve it. */
export function matchFastRoute(method: string | undefined, url: string | undefined): FastMatch | null {
  if (!url) return null;
  const pathname = url.split("?", 1)[0];
  if (method === "POST" && Object.hasOwn(POSTS, pathname)) return { handler: POSTS[pathname], params: {}, timed: TIMED[pathname] };
  if (method === "GET") {
    if (pathname === "/metrics") return { handler: metrics as Handler, params: {} };
    if (pathname === "/healthz") return { handler: healthz as Handler, params: {} };
    if (pathname === "/readyz") return { handler: readyz as Handler, params: {} };
    const m = KEY_STATE.exec(pathname);
    if (m) {
      try {
        return { handler: keyState as Handler, params: { source: decodeURIComponent(m[1]), eventId: decodeURIComponent(m[2]) } };
      } catch {
        return null; // malformed percent-encoding: refused before this (api-edge.ts); Next would answer it otherwise
      }
    }
  }
  return null;
}

export async function serveFast(match: FastMatch, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const started = match.timed ? performance.now() : 0;
  let read: Fallback["read"] = null;
  if (match.timed) {
    const fallback = await serveClaimNative(match.timed, req, res);
    if (!fallback) return void observeClaimSeconds(match.timed, (performance.now() - started) / 1000, res.headersSent ? res.statusCode : 0);
    read = fallback.read;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  // The body the native lane already read (if any) goes first, then the rest of the stream.
  const stream = read ? Readable.from(withPrefix(read.prefix, read.complete ? [] : req)) : req;
  // The handlers never read the host; a fixed origin also keeps a malformed Host header harmless.
  const request = new Request(new URL(req.url ?? "/", "http://localhost"), {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(stream) as ReadableStream<Uint8Array>) : undefined,
    duplex: "half",
  } as RequestInit);
  const response = await match.handler(request, { params: Promise.resolve(match.params) });
  if (match.timed) observeClaimSeconds(match.timed, (performance.now() - started) / 1000, response.status);
  // A refused request (401, 413, …) may leave its body unread; closing is cheaper than draining it,
  // and the connection could not serve the next request until the body was consumed.
  await writeResponse(res, response, hasBody && !req.complete ? { connection: "close" } : undefined);
}

async function* withPrefix(prefix: Buffer[], rest: AsyncIterable<Buffer> | Iterable<Buffer>): AsyncGenerator<Buffer> {
  yield* prefix;
  yield* rest;
}
