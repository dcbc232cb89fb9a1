/**
 * The one route wrapper. Every handler under app/api is exported through `route(handler, access)`, which
 * states who may call it, authenticates the caller (an API key as `Authorization: Bearer`, or a console
 * session cookie), authorizes it by the same rule pages use (lib/auth/authorize.ts), refuses
 * cross-origin cookie-authenticated changes (CSRF), and maps every thrown error to the one error body
 * `{ "error": { "code", "message", "details"? } }`: KeywardError → its status, database faults → 503,
 * anything else → 500 with nothing leaked.
 */
import "server-only";
import { createHash, timingSafeEqual } from "node:crypto";
import { KeywardError } from "../errors";
import { verifyApiKey } from "../auth/api-keys";
import { authorize } from "../auth/authorize";
import type { Principal } from "../auth/principal";
import type { Capability } from "../auth/roles";
import { hasSessionCookie, sessionPrincipal } from "../auth/session";
import { isUnavailable, toUnavailable } from "../db/sql";
import { loadEnv } from "../config/env";
import { storableRepresentation, unstorableReason } from "./fields";

export type { Principal };

/**
 * Who may call a route: holders of at least one of `allow` (roles and API-key scopes resolve to
 * capabilities, see lib/auth/roles.ts), or anyone, for the few routes that must work before sign-in
 * (`public` says why).
 */
export type RouteAccess = { allow: readonly Capability[]; token?: RouteToken } | { public: string };

/**
 * A configured shared secret a route also accepts as `Authorization: Bearer` (GET /metrics takes
 * KEYWARD_METRICS_TOKEN, for scrapers without an API key): `get` reads it (undefined: not configured);
 * the caller then acts as `name` with the route's `allow` capabilities.
 */
export type RouteToken = { name: string; get: () => string | undefined };

export type RouteContext<P> = { req: Request; params: P; principal: Principal };
export type PublicRouteContext<P> = { req: Request; params: P; principal: Principal | null };

type NextContext = { params: Promise<Record<string, string | string[]>> };

export function route<P = Record<string, string>>(
  handler: (ctx: RouteContext<P>) => Promise<Response>,
  access: { allow: readonly Capability[]; token?: RouteToken },
): ((req: Request, next?: NextContext) => Promise<Response>) & { access: RouteAccess };
export function route<P = Record<string, string>>(
  handler: (ctx: PublicRouteContext<P>) => Promise<Response>,
  access: { public: string },
): ((req: Request, next?: NextContext) => Promise<Response>) & { access: RouteAccess };
export function route<P>(handler: (ctx: RouteContext<P>) => Promise<Response>, access: RouteAccess) {
  const wrapped = async (req: Request, next?: NextContext): Promise<Response> => {
    try {
      const principal = ("token" in access && access.token && tokenPrincipal(req, access.token, access.allow)) || (await authenticate(req, "public" in access));
      if (principal && !SAFE_METHODS.has(req.method) && principal.kind === "user") assertSameOrigin(req);
      if ("allow" in access) authorize(principal!, access.allow);
      const params = ((await next?.params) ?? {}) as P;
      assertStorableUrl(req, params as Record<string, string | string[]>);
      // A public route's handler is typed to accept null (PublicRouteContext); others always get a principal.
      return await handler({ req, params, principal: principal as Principal });
    } catch (err) {
      return errorResponse(err);
    }
  };
  return Object.assign(wrapped, { access });
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The principal of a request that sends the route's configured token, else null (compared in constant time). */
function tokenPrincipal(req: Request, token: RouteToken, allow: readonly Capability[]): Principal | null {
  const expected = token.get();
  const sent = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
  if (!expected || !sent) return null;
  const a = createHash("sha256").update(sent).digest();
  const b = createHash("sha256").update(expected).digest();
  if (!timingSafeEqual(a, b)) return null;
  return { kind: "apikey", id: token.name, name: token.name, capabilities: [...allow] };
}

/**
 * Path segments and query values reach SQL as text: one holding a NUL (`%00`), which PostgreSQL cannot
 * take, is a 422 naming it, on every route at once. (Malformed percent-encoding never gets this far:
 * lib/server/api-edge.ts answers it; a lone surrogate cannot come out of a URL, which decodes as UTF-8.)
 */
function assertStorableUrl(req: Request, params: Record<string, string | string[]>): void {
  const fields: { field: string; message: string }[] = [];
  for (const [name, value] of Object.entries(params)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      const reason = unstorableReason(v);
      if (reason) fields.push({ field: name, message: `path segment ${reason}` });
    }
  }
  for (const [name, value] of new URL(req.url).searchParams) {
    const reason = unstorableReason(name) ?? unstorableReason(value);
    if (reason) fields.push({ field: storableRepresentation(name), message: `query parameter ${reason}` });
  }
  if (fields.length) {
    const summary = fields.map((f) => `${f.field}: ${f.message}`).join("; ");
    throw KeywardError.unprocessable("invalid_request", `invalid request: ${summary}`, { fields });
  }
}

/**
 * An API key wins when sent (a wrong one is a 401 even with a valid cookie: the caller meant the key).
 * Otherwise the session cookie; otherwise no one (a 401 unless the route is public).
 */
async function authenticate(req: Request, optional: boolean): Promise<Principal | null> {
  const header = req.headers.get("authorization");
  if (header) {
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    if (!m) throw KeywardError.unauthorized("Authorization must be 'Bearer <api key>'");
    const principal = await verifyApiKey(m[1]);
    if (!principal) throw KeywardError.unauthorized("invalid or revoked API key");
    return principal;
  }
  const user = hasSessionCookie(req.headers) ? await sessionPrincipal(req.headers) : null;
  if (user || optional) return user;
  throw KeywardError.unauthorized(
    hasSessionCookie(req.headers)
      ? "your session has ended; sign in again"
      : "sign in to the console, or send Authorization: Bearer <api key>",
  );
}

/**
 * CSRF: a change made with a session cookie must come from the console's own origin. Browsers send
 * Origin on every cross-origin request and on same-origin non-GET fetches; a request that carries
 * neither Origin nor Sec-Fetch-Site: same-origin is refused.
 */
export function assertSameOrigin(req: Request): void {
  const origin = req.headers.get("origin");
  if (origin) {
    if (origin !== "null" && allowedOrigins(req).has(origin.toLowerCase())) return;
    throw KeywardError.forbidden(`cross-origin request refused: Origin ${origin} is not this console`);
  }
  if (req.headers.get("sec-fetch-site") === "same-origin") return;
  throw KeywardError.forbidden("cross-origin request refused: a signed-in change must send an Origin header");
}

function allowedOrigins(req: Request): Set<string> {
  const origins = new Set<string>();
  const host = req.headers.get("host");
  if (host) {
    origins.add(`http://${host}`.toLowerCase());
    origins.add(`https://${host}`.toLowerCase());
  }
  const publicUrl = loadEnv().KEYWARD_PUBLIC_URL;
  if (publicUrl) origins.add(new URL(publicUrl).origin.toLowerCase());
  return origins;
}

/** The caller's address as the server saw it (set by lib/server/start.ts, replacing any client value). */
export function clientAddress(req: Request): string {
  return req.headers.get("x-keyward-client-ip") || "unknown";
}

export function json(body: unknown, status = 200, headers?: HeadersInit): Response {
  return Response.json(body, { status, headers });
}

export function errorResponse(err: unknown): Response {
  let e: KeywardError;
  if (err instanceof KeywardError) e = err;
  else if (isUnavailable(err)) e = toUnavailable(err);
  else {
    console.error("[keyward] unhandled error:", err);
    e = new KeywardError(500, "internal_error", "internal error; see the server log");
  }
  const body: { code: string; message: string; details?: unknown } = { code: e.code, message: e.message };
  if (e.details !== undefined) body.details = e.details;
  const retryAfter = (e.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
  const headers = e.status === 503 ? { "retry-after": "5" } : retryAfter ? { "retry-after": String(retryAfter) } : undefined;
  return json({ error: body }, e.status, headers);
}

export const MAX_BODY_BYTES = 1024 * 1024;

/** Reads a JSON body: 413 above 1 MiB, 415 unless JSON, 400 when it is not UTF-8 or does not parse. */
export async function readJson(req: Request, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  assertJsonType(req, maxBytes);
  return parseJson(decodeUtf8(await readLimited(req, maxBytes)));
}

/**
 * A JSON body with the bytes it was parsed from, for a route that must keep part of it exactly as sent
 * (dead-letter payloads). Like readJson, and also 400 when the body is not valid UTF-8 (RFC 8259 8.1),
 * so the bytes and the parsed value always say the same thing. JSON.parse is iterative in V8: any
 * nesting depth parses without exhausting the stack.
 */
export async function readJsonBody(req: Request, maxBytes = MAX_BODY_BYTES): Promise<{ bytes: Buffer; value: unknown }> {
  assertJsonType(req, maxBytes);
  const bytes = await readLimited(req, maxBytes);
  return { bytes, value: parseJson(decodeUtf8(bytes)) };
}

/** JSON text is UTF-8 (RFC 8259 8.1): invalid bytes are refused, not silently turned into U+FFFD. */
function decodeUtf8(bytes: Buffer): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw KeywardError.badRequest("malformed_json", "body is not valid UTF-8");
  }
}

function assertJsonType(req: Request, maxBytes: number): void {
  const type = req.headers.get("content-type") ?? "";
  if (!/^application\/(.+\+)?json\b/i.test(type)) {
    throw new KeywardError(415, "unsupported_media_type", "send the body as Content-Type: application/json");
  }
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw KeywardError.badRequest("malformed_json", `body is not valid JSON: ${(err as Error).message}`);
  }
}

/** Like readJson, for routes whose body is optional: a request without Content-Type or body reads as `{}`. */
export async function readOptionalJson(req: Request, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const length = req.headers.get("content-length");
  if (!req.headers.has("content-type") && (length === null || length === "0")) return {};
  return readJson(req, maxBytes);
}

function tooLarge(maxBytes: number) {
  return new KeywardError(413, "body_too_large", `body exceeds ${maxBytes} bytes`);
}

async function readLimited(req: Request, maxBytes: number): Promise<Buffer> {
  if (!req.body) return Buffer.alloc(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
