/**
 * The API's edge in the Node server, in front of both routers (the claim fast path and Next). It answers,
 * in the one error body `{ "error": { "code", "message" } }` and with the API's security headers, what
 * neither router answers well:
 * - a path that is not valid percent-encoded UTF-8 (`%ZZ`, the overlong `%C0%AE`, the encoded surrogate
 *   `%ED%A0%80`): Next fails decoding its dynamic segments (a bare 500 without headers), so 400 here
 *   (console pages get a plain-text 400 from lib/server/start.ts for the same reason);
 * - a trailing slash or an empty segment (`/api/v1/claims/`, `/api//v1`): Next would 308-redirect, which
 *   API clients follow badly (many drop a POST's body); 404 here, naming the path to use;
 * - the refusals Next writes with an empty body (405 for a method the route does not export) get the one
 *   error body on their way out.
 * Paths no route matches are answered by app/api/[[...path]]/route.ts, a NUL in a segment by the route
 * wrapper (lib/http/route.ts), so every answer under /api is JSON.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { KeywardError } from "@/lib/errors";
import type { ErrorBody } from "@/lib/http/error-body";
import { API_HEADERS } from "@/lib/http/headers";

export const isApiPath = (url: string | undefined): boolean => url === "/api" || /^\/api[/?]/.test(url ?? "");

/** The 1-based index of the first path segment that is not valid percent-encoded UTF-8, or 0. */
export function malformedSegment(url: string): number {
  const segments = url.split("?", 1)[0].split("/").slice(1);
  for (let i = 0; i < segments.length; i++) {
    try {
      decodeURIComponent(segments[i]);
    } catch {
      return i + 1;
    }
  }
  return 0;
}

/** Why this API request's path cannot be routed, or null. */
export function apiPathProblem(url: string): KeywardError | null {
  const segments = url.split("?", 1)[0].split("/").slice(1);
  const bad = malformedSegment(url);
  if (bad) {
    return KeywardError.badRequest("malformed_path", `path segment ${bad} is not valid percent-encoded UTF-8 (each %XX must encode UTF-8 bytes)`);
  }
  if (segments.length > 1 && segments.some((s) => s === "")) {
    const canonical = "/" + segments.filter((s) => s !== "").join("/");
    return KeywardError.notFound("not_found", `no API endpoint at this path; did you mean ${canonical} (no empty segment or trailing slash)?`);
  }
  return null;
}

/** Writes an error answer in the one shape, with the API headers. */
export function writeApiError(res: ServerResponse, e: KeywardError): void {
  const body = JSON.stringify({ error: { code: e.code, message: e.message } } satisfies ErrorBody);
  res.writeHead(e.status, {
    ...Object.fromEntries(API_HEADERS),
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

/**
 * Gives Next's bodiless 405 (a method the route does not export) the one error body. Next commits it
 * through its compression layer, which wraps this response's methods after this runs: headers go out
 * through writeHead (where the JSON type and length are set), then an end() without a chunk, which sends
 * the body.
 */
export function completeBodilessRefusals(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === "HEAD") return;
  const original = res as unknown as Record<"writeHead" | "end", (...args: unknown[]) => unknown>;
  const { writeHead, end } = original;
  let body: string | null = null;
  original.writeHead = (...args: unknown[]) => {
    const status = typeof args[0] === "number" ? args[0] : res.statusCode;
    if (status === 405 && !res.getHeader("content-type")) {
      const pathname = (req.url ?? "").split("?", 1)[0];
      body = JSON.stringify({ error: { code: "method_not_allowed", message: `${req.method} is not allowed on ${pathname}` } });
      res.setHeader("content-type", "application/json");
      res.setHeader("content-length", String(Buffer.byteLength(body)));
      res.removeHeader("transfer-encoding");
    }
    return writeHead.apply(res, args);
  };
  original.end = (...args: unknown[]) => {
    const chunk = args[0];
    const empty = chunk === undefined || chunk === null || typeof chunk === "function" || (chunk as { length?: number }).length === 0;
    if (body !== null && empty) {
      const text = body;
      body = null;
      return end.call(res, text, ...args.filter((a) => typeof a === "function"));
    }
    return end.apply(res, args);
  };
}
