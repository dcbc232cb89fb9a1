/**
 * The one route wrapper. Every handler under app/api is exported through `route(handler, { scopes })`,
 * which states who may call it, authenticates the caller, and maps every thrown error to the one error
 * body `{ "error": { "code", "message", "details"? } }`: KeywardError → its status, database faults →
 * 503, anything else → 500 with nothing leaked.
 */
import { KeywardError } from "../errors";
import { verifyApiKey, type ApiKeyPrincipal } from "../auth/api-keys";
import { hasScope, type Scope } from "../auth/schema";
import { isUnavailable, toUnavailable } from "../db/sql";

/**
 * Who is calling. Until console sign-in exists, a browser request to a console route (no Authorization
 * header) is the anonymous local console user with read access only; the server binds to localhost by
 * default for that reason.
 */
export type Principal = ApiKeyPrincipal | { kind: "console"; name: "console"; scopes: Scope[] };

export type RouteAccess = {
  /** The caller needs at least one of these scopes. */
  scopes: readonly Scope[];
  /** The console's own pages may call this route without an API key (read-only routes only). */
  console?: boolean;
};

export type RouteContext<P> = { req: Request; params: P; principal: Principal };

type NextContext = { params: Promise<Record<string, string | string[]>> };

export function route<P = Record<string, string>>(
  handler: (ctx: RouteContext<P>) => Promise<Response>,
  access: RouteAccess,
) {
  const wrapped = async (req: Request, next?: NextContext): Promise<Response> => {
    try {
      const principal =
        access.console && !req.headers.has("authorization")
          ? ({ kind: "console", name: "console", scopes: ["read"] } as const satisfies Principal)
          : await authenticate(req);
      if (!access.scopes.some((s) => hasScope(principal.scopes, s))) {
        throw KeywardError.forbidden(`this API key lacks the scope: needs one of ${access.scopes.join(", ")}`);
      }
      const params = ((await next?.params) ?? {}) as P;
      return await handler({ req, params, principal });
    } catch (err) {
      return errorResponse(err);
    }
  };
  return Object.assign(wrapped, { access });
}

async function authenticate(req: Request): Promise<ApiKeyPrincipal> {
  const header = req.headers.get("authorization");
  if (!header) throw KeywardError.unauthorized("missing Authorization: Bearer <api key>");
  const m = /^Bearer\s+(\S+)$/i.exec(header);
  if (!m) throw KeywardError.unauthorized("Authorization must be 'Bearer <api key>'");
  const principal = await verifyApiKey(m[1]);
  if (!principal) throw KeywardError.unauthorized("invalid or revoked API key");
  return principal;
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
  const headers = e.status === 503 ? { "retry-after": "5" } : undefined;
  return json({ error: body }, e.status, headers);
}

export const MAX_BODY_BYTES = 1024 * 1024;

/** Reads a JSON body: 413 above 1 MiB, 415 unless JSON, 400 when it does not parse. */
export async function readJson(req: Request, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const type = req.headers.get("content-type") ?? "";
  if (!/^application\/(.+\+)?json\b/i.test(type)) {
    throw new KeywardError(415, "unsupported_media_type", "send the body as Content-Type: application/json");
  }
  const declared = Number(req.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const text = await readLimited(req, maxBytes);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw KeywardError.badRequest("malformed_json", `body is not valid JSON: ${(err as Error).message}`);
  }
}

function tooLarge(maxBytes: number) {
  return new KeywardError(413, "body_too_large", `body exceeds ${maxBytes} bytes`);
}

async function readLimited(req: Request, maxBytes: number): Promise<string> {
  if (!req.body) return "";
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
  return Buffer.concat(chunks).toString("utf8");
}
