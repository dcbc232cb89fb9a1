/**
 * The one route wrapper. Every handler under app/api is exported through `route(handler, options)`, which
 * states who may call it, authenticates the caller (an API key as `Authorization: Bearer`, or a console
 * session cookie), authorizes it by the same rule pages use (lib/auth/authorize.ts), refuses
 * cross-origin cookie-authenticated changes (CSRF), parses the request's input with the zod schemas it is
 * given (params, query, headers, body: a 422 naming each refused field, 400/413/415 for a body that is not
 * JSON, too large or of another type) and hands the handler typed values, and maps every thrown error to
 * the one error body `{ "error": { "code", "message", "details"? } }`: KeywardError → its status,
 * database faults → 503, anything else → 500 with nothing leaked.
 *
 *     export const PATCH = route(
 *       async ({ params, body, principal }) => json(await updateSource(params.name, body, principal)),
 *       { allow: ["admin"], params: z.object({ name: sourceName }), body: updateSourceRequest, maxBodyBytes: 4096 },
 *     );
 *
 * Order: authenticate → same-origin → authorize → `guard` → params → query → headers → body → handler, so
 * a caller who may not call a route learns nothing from its validation.
 */
import "server-only";
import { checkShapes } from "@/lib/shape-checks";
import { createHash, timingSafeEqual } from "node:crypto";
import type { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { verifyApiKey } from "@/lib/auth/api-keys";
import { authorize } from "@/lib/auth/authorize";
import type { Principal } from "@/lib/auth/principal";
import type { Capability } from "@/lib/auth/roles";
import { hasSessionCookie, sessionPrincipal } from "@/lib/auth/session";
import { isUnavailable, toUnavailable } from "@/lib/db/sql";
import { loadEnv } from "@/lib/config/env";
import type { ErrorBody } from "./error-body";
import { storableRepresentation, unstorableReason } from "./fields";
import { parseInput } from "./validate";
import { withoutBom } from "./bom";

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

/** What a route reads from the request, each parsed by its schema before the handler runs. */
export type RouteInput = {
  /** The dynamic path segments (`{ name }` of /sources/[name]); unparsed: `Record<string, string>`. */
  params?: z.ZodType;
  /** The query string as an object (one value per name, the last wins); unparsed: not read. */
  query?: z.ZodType;
  /** Request headers by lower-case name (missing ones are absent). */
  headers?: z.ZodType;
  /** The JSON body; unparsed: not read. */
  body?: z.ZodType;
  /** Largest body accepted (413 above); default MAX_BODY_BYTES. */
  maxBodyBytes?: number;
  /** A request without Content-Type and body reads as `{}` (for bodies whose every field is optional). */
  optionalBody?: boolean;
  /** Also hand the handler the body's bytes as received (`bodyBytes`), for what must be kept exactly as sent. */
  keepBodyBytes?: boolean;
  /**
   * A body of any media type, handed over as its bytes (`bodyBytes`), unparsed (the raw dead-letter
   * intake): read into one buffer of its declared length, 413 above `maxBytes()` (read per request: a setting).
   */
  rawBody?: RawBody;
  /**
   * A check before any input is read, for a route whose callers prove themselves otherwise (a shared
   * secret, the console's own origin): its refusal wins over a validation error.
   */
  guard?: (req: Request) => void | Promise<void>;
};

/** A route's raw body: its limit, and what the API description says of it. */
export type RawBody = { maxBytes: () => number; description: string };

/** An answer of the route other than the one error body: a success, or an outcome with a body of its own. */
export type RouteResponse = {
  description: string;
  /** The body's zod schema, where the domain has one (lib/<domain>/schema.ts). */
  schema?: z.ZodType;
  /**
   * Default application/json; null for an answer without a body (a redirect); ANY_MEDIA_TYPE for bytes
   * answered with a media type of their own (a dead letter's payload, with the Content-Type it was stored with).
   */
  contentType?: string | null;
};

/** The media range of every type (OpenAPI allows ranges): an answer of any Content-Type, but with one. */
export const ANY_MEDIA_TYPE = "*/*";

/**
 * What the API description (GET /api/v1/openapi.json, lib/openapi/document.ts) tells of a route beyond its
 * access and input. No effect on a request.
 */
export type RouteDoc = {
  /** One line: what the route does. */
  summary?: string;
  /** The answers that are not the error body, by status; default `200` with a JSON object. */
  responses?: Readonly<Record<number, RouteResponse>>;
  /**
   * Error statuses of the route's own (404 unknown, 409 a conflicting state, 429 …), besides the ones the
   * description adds itself: 401, 422, 500 and 503 on every route, 403 unless public, 400 with a path
   * parameter or a body, 413 and 415 with a body. test/http/fuzz.system.test.ts fails on a status not declared.
   */
  errors?: readonly number[];
};

export type RouteOptions = RouteAccess & RouteInput & RouteDoc;

/** What route() was given, kept on the handler for the API description: the input schemas and the RouteDoc. */
export type RouteSpec = RouteDoc &
  Pick<RouteInput, "params" | "query" | "headers" | "body" | "maxBodyBytes" | "optionalBody" | "rawBody"> & {
    /** Whether the route runs a `guard` (a shared secret, the console's origin) before reading input. */
    guarded: boolean;
    /** The shared secret a route also accepts as a bearer token (RouteToken.name), if any. */
    token?: string;
  };

type Parsed<S, Otherwise> = S extends z.ZodType ? z.output<S> : Otherwise;

/** What the handler receives: the request, the caller, and the parsed input. */
export type RouteContext<O extends RouteOptions> = {
  req: Request;
  principal: O extends { public: string } ? Principal | null : Principal;
  params: Parsed<O["params"], Record<string, string>>;
  query: Parsed<O["query"], undefined>;
  headers: Parsed<O["headers"], undefined>;
  body: Parsed<O["body"], undefined>;
  bodyBytes: O["keepBodyBytes"] extends true ? Buffer : O["rawBody"] extends RawBody ? Buffer : undefined;
};

type NextContext = { params: Promise<Record<string, string | string[]>> };

export type RouteHandler = ((req: Request, next?: NextContext) => Promise<Response>) & { access: RouteAccess; spec: RouteSpec };

export function route<const O extends RouteOptions>(handler: (ctx: RouteContext<O>) => Promise<Response>, options: O): RouteHandler {
  const access: RouteAccess =
    "public" in options ? { public: options.public } : { allow: options.allow, ...(options.token ? { token: options.token } : {}) };
  const wrapped = async (req: Request, next?: NextContext): Promise<Response> => {
    try {
      const principal =
        ("token" in options && options.token && tokenPrincipal(req, options.token, options.allow)) || (await authenticate(req, "public" in options));
      if (principal && !SAFE_METHODS.has(req.method) && principal.kind === "user") assertSameOrigin(req);
      if ("allow" in options) authorize(principal!, options.allow);
      if (options.guard) await options.guard(req);
      const rawParams = (await next?.params) ?? {};
      assertStorableUrl(req, rawParams);
      const input = await readInput(req, rawParams, options);
      // A public route's handler is typed to accept null; others always get a principal.
      const res = await handler({ req, principal: principal as Principal, ...input } as RouteContext<O>);
      return checkShapes() ? await checkedResponse(req, res, options.responses) : res;
    } catch (err) {
      return errorResponse(err);
    }
  };
  return Object.assign(wrapped, { access, spec: specOf(options) });
}

/**
 * The answer if it is what the route declares for its status: a JSON body its schema accepts, or the declared
 * media type. A mismatch is a bug of the route: a 500 (the one error body), and the server log says what differs.
 * Statuses the route does not declare are errors (the one error body), not checked here.
 */
async function checkedResponse(req: Request, res: Response, declared: RouteDoc["responses"]): Promise<Response> {
  const d = declared?.[res.status];
  if (!d) return res;
  const type = res.headers.get("content-type") ?? "";
  const where = `${req.method} ${new URL(req.url).pathname} answered ${res.status}`;
  if (d.contentType === null) return res;
  const want = d.contentType ?? "application/json";
  if (want === ANY_MEDIA_TYPE ? !type : !type.toLowerCase().startsWith(want.toLowerCase())) {
    return errorResponse(new Error(`response check: ${where} as ${type || "no content type"}, declared ${want}`));
  }
  if (!d.schema || !want.endsWith("json")) return res;
  let body: unknown;
  try {
    body = await res.clone().json();
  } catch (err) {
    return errorResponse(new Error(`response check: ${where} with a body that is not JSON`, { cause: err }));
  }
  const parsed = d.schema.safeParse(body);
  if (parsed.success) return res;
  const issues = parsed.error.issues.map((i) => `${i.path.map(String).join(".") || "(body)"}: ${i.message}`).join("; ");
  return errorResponse(new Error(`response check: ${where} with a body its declared schema refuses: ${issues}`));
}

function specOf(o: RouteOptions): RouteSpec {
  return {
    summary: o.summary,
    responses: o.responses,
    errors: o.errors,
    params: o.params,
    query: o.query,
    headers: o.headers,
    body: o.body,
    maxBodyBytes: o.body ? (o.maxBodyBytes ?? MAX_BODY_BYTES) : undefined,
    optionalBody: o.optionalBody,
    rawBody: o.rawBody,
    guarded: o.guard !== undefined,
    token: "token" in o ? o.token?.name : undefined,
  };
}

async function readInput(req: Request, rawParams: Record<string, string | string[]>, o: RouteInput) {
  const params = o.params ? parseInput(o.params, rawParams) : rawParams;
  const query = o.query ? parseInput(o.query, Object.fromEntries(new URL(req.url).searchParams)) : undefined;
  const headers = o.headers ? parseInput(o.headers, Object.fromEntries(req.headers)) : undefined;
  let body: unknown;
  let bodyBytes: Buffer | undefined;
  if (o.body) {
    const max = o.maxBodyBytes ?? MAX_BODY_BYTES;
    if (o.keepBodyBytes) ({ bytes: bodyBytes, value: body } = await readJsonBody(req, max));
    else body = o.optionalBody ? await readOptionalJson(req, max) : await readJson(req, max);
    body = parseInput(o.body, body);
  } else if (o.rawBody) {
    bodyBytes = await readRaw(req, o.rawBody.maxBytes());
  }
  return { params, query, headers, body, bodyBytes };
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
  const body: ErrorBody["error"] = { code: e.code, message: e.message };
  if (e.details !== undefined) body.details = e.details;
  const retryAfter = (e.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
  const headers = e.status === 503 ? { "retry-after": "5" } : retryAfter ? { "retry-after": String(retryAfter) } : undefined;
  return json({ error: body }, e.status, headers);
}

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads a JSON body: 413 above 1 MiB, 415 unless JSON, 400 when it is not UTF-8 or does not parse. A UTF-8
 * byte order mark before the JSON text (some proxies add one) is ignored, as RFC 8259 §8.1 allows.
 */
async function readJson(req: Request, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  assertJsonType(req, maxBytes);
  return parseJson(decodeUtf8(withoutBom(await readLimited(req, maxBytes))));
}



/**
 * A JSON body with the bytes it was parsed from, for a route that must keep part of it exactly as sent
 * (dead-letter payloads). Like readJson, and also 400 when the body is not valid UTF-8 (RFC 8259 8.1),
 * so the bytes and the parsed value always say the same thing. JSON.parse is iterative in V8: any
 * nesting depth parses without exhausting the stack.
 */
async function readJsonBody(req: Request, maxBytes = MAX_BODY_BYTES): Promise<{ bytes: Buffer; value: unknown }> {
  assertJsonType(req, maxBytes);
  const bytes = withoutBom(await readLimited(req, maxBytes));
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
async function readOptionalJson(req: Request, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
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

/**
 * A body of any type as one buffer: allocated once at its declared Content-Length and filled in place
 * (no chunk list, no concatenation: the request's only copy); a body without a length grows its buffer
 * by doubling. 413 as soon as it passes `maxBytes`, before reading on.
 */
async function readRaw(req: Request, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  if (!req.body) return Buffer.alloc(0);
  let out = Buffer.allocUnsafe(Number.isSafeInteger(declared) && declared >= 0 ? declared : 64 * 1024);
  let size = 0;
  const reader = req.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (size + value.byteLength > maxBytes) {
      await reader.cancel();
      throw tooLarge(maxBytes);
    }
    if (size + value.byteLength > out.length) {
      const grown = Buffer.allocUnsafe(Math.min(maxBytes, Math.max(out.length * 2, size + value.byteLength)));
      out.copy(grown, 0, 0, size);
      out = grown;
    }
    out.set(value, size);
    size += value.byteLength;
  }
  return size === out.length ? out : out.subarray(0, size);
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
