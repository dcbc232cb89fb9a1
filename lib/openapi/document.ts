/**
 * The API description (OpenAPI 3.1), built from what the routes declare and nothing else: each handler's
 * `.access` and `.spec` (lib/http/route.ts), i.e. the very zod schemas route() parses requests with,
 * converted by zod's `z.toJSONSchema` (input side: what a caller sends, before transforms and defaults).
 * Served by GET /api/v1/openapi.json; the route list comes from the generated manifest beside that route.
 *
 * Pure: no I/O, never throws on a schema JSON Schema cannot express (a transform's output, a custom
 * check): that part reads as "any value" and the rest stays exact.
 */
import "server-only";
import { z } from "zod";
import { SESSION_COOKIE_PREFIX } from "@/lib/auth/auth";
import { roleCapabilities, ROLES, type Capability } from "@/lib/auth/roles";
import { hasScope, SCOPES } from "@/lib/auth/schema";
import { errorBody } from "@/lib/http/error-body";
import type { RouteHandler, RouteResponse, RouteSpec } from "@/lib/http/route";

export const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** A route file's exports as the manifest imports them. */
export type RouteModule = Partial<Record<HttpMethod, RouteHandler>>;

/** One operation: a Next URL pattern (`/api/v1/sources/[name]`), a method and its handler. */
export type RouteOperation = { urlPattern: string; method: HttpMethod; handler: RouteHandler };

type Json = { [key: string]: unknown };

/** Every exported method of every module, in the modules' order. */
export function operationsOf(modules: readonly { urlPattern: string; module: RouteModule }[]): RouteOperation[] {
  return modules.flatMap(({ urlPattern, module }) =>
    HTTP_METHODS.flatMap((method) => {
      const handler = module[method];
      return handler ? [{ urlPattern, method, handler }] : [];
    }),
  );
}

/** `/api/v1/sources/[name]` → `/api/v1/sources/{name}`; `[...all]` and `[[...path]]` → `{all}`, `{path}`. */
export function openApiPath(urlPattern: string): string {
  return urlPattern.replace(/\[\[?(?:\.\.\.)?([^\]]+)\]?\]/g, "{$1}");
}

export function buildOpenApiDocument(operations: readonly RouteOperation[], info: { version: string }): Json {
  const schemas: Record<string, Json> = { Error: jsonSchemaOf(errorBody, "Error", {}) };
  const paths: Record<string, Record<string, Json>> = {};
  const ids = operationIds(operations);
  for (const op of operations) {
    const path = openApiPath(op.urlPattern);
    (paths[path] ??= {})[op.method.toLowerCase()] = operationOf(op, path, ids.get(op)!, schemas);
  }
  const sorted = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: "3.1.1",
    info: {
      title: "Keyward API",
      version: info.version,
      description:
        "Webhook and event idempotency keys: claim once, expire deliberately, audit forever, replay safely. " +
        "Generated from the routes' own schemas and access rules. Every error answer has one shape " +
        "(components.schemas.Error); a 503 (database unavailable) carries Retry-After.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    tags: [...new Set(Object.values(sorted).flatMap((ops) => Object.values(ops).flatMap((o) => o.tags as string[])))]
      .sort()
      .map((name) => ({ name })),
    paths: sorted,
    components: {
      schemas,
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          description:
            "An API key (`kw_…`, created by an admin) as `Authorization: Bearer <key>`; its scopes decide what it may " +
            "call. GET /metrics also takes KEYWARD_METRICS_TOKEN this way.",
        },
        session: {
          type: "apiKey",
          in: "cookie",
          name: `${SESSION_COOKIE_PREFIX}.session_token`,
          description:
            `The console's session cookie (\`__Secure-${SESSION_COOKIE_PREFIX}.session_token\` when served over https), ` +
            "set by POST /api/v1/session; the user's role decides what it may call. A change made with it must come " +
            "from the console's origin (Origin header), else 403.",
        },
      },
    },
  };
}

function operationOf(op: RouteOperation, path: string, id: string, schemas: Record<string, Json>): Json {
  const { access, spec } = op.handler;
  const parameters = [
    ...pathParameters(op.urlPattern, spec, id, schemas),
    ...objectParameters("query", spec.query, id, schemas),
    ...objectParameters("header", spec.headers, id, schemas),
  ];
  const callers =
    "public" in access
      ? `Public: ${access.public}.`
      : `Callers: ${describeCallers(access.allow)}${spec.token ? `, or Authorization: Bearer $${spec.token}` : ""}.`;
  const operation: Json = {
    operationId: id,
    summary: spec.summary ?? `${op.method} ${path}`,
    description: callers,
    tags: [tagOf(path)],
    security: "public" in access ? [] : [{ apiKey: [] }, { session: [] }],
    ...("public" in access ? { "x-keyward-public": access.public } : { "x-keyward-allow": [...access.allow] }),
  };
  if (parameters.length) operation.parameters = parameters;
  if (spec.body) {
    operation.requestBody = {
      required: !spec.optionalBody,
      description:
        `JSON, at most ${spec.maxBodyBytes} bytes (413 above).` +
        (spec.optionalBody ? " May be left out (no Content-Type and no body): it then reads as {}." : ""),
      content: { "application/json": { schema: jsonSchemaOf(spec.body, `${id}_body`, schemas) } },
    };
  } else if (spec.rawBody) {
    operation.requestBody = {
      required: true,
      description: `${spec.rawBody.description} At most ${spec.rawBody.maxBytes()} bytes (413 above).`,
      content: { "*/*": { schema: { type: "string", format: "binary" } } },
    };
  }
  operation.responses = responsesOf(op, path, spec, id, schemas);
  return operation;
}

/**
 * `postClaims` for POST /api/v1/claims: the method and the path's words after /api/v1. Two operations that
 * would share one (GET /metrics, GET /api/v1/metrics) both take the words of their whole path.
 */
function operationIds(operations: readonly RouteOperation[]): Map<RouteOperation, string> {
  const idOf = (op: RouteOperation, whole: boolean) => {
    const words = openApiPath(op.urlPattern)
      .split("/")
      .filter(Boolean)
      .filter((s, i) => whole || !((i === 0 && s === "api") || (i === 1 && s === "v1")))
      .map((s) => s.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? "").toUpperCase()))
      .map((s) => s.charAt(0).toUpperCase() + s.slice(1));
    return op.method.toLowerCase() + words.join("");
  };
  const short = operations.map((op) => idOf(op, false));
  return new Map(operations.map((op, i) => [op, short.indexOf(short[i]) === short.lastIndexOf(short[i]) ? short[i] : idOf(op, true)]));
}

function tagOf(path: string): string {
  const segs = path.split("/").filter(Boolean);
  if (segs[0] !== "api") return segs[0];
  if (segs[1] === "v1") return segs[2];
  return segs[1].startsWith("{") ? "fallback" : segs[1];
}

/** "roles viewer, operator, admin (console session); API keys with scope read or operator". */
function describeCallers(allow: readonly Capability[]): string {
  const may = (granted: readonly string[]) => allow.some((c) => (c === "admin" ? granted.includes("admin") : hasScope(granted, c)));
  const roles = ROLES.filter((r) => may(roleCapabilities(r)));
  const scopes = SCOPES.filter((s) => may([s]));
  const parts = [];
  if (roles.length) parts.push(`console role ${roles.join(", ")}`);
  if (scopes.length) parts.push(`API keys with scope ${scopes.join(" or ")}`);
  return parts.join("; ");
}

/**
 * Path parameters: every dynamic segment of the pattern, with its schema when the route parses it, else a
 * string. A catch-all (`[...all]`, `[[...path]]`) is the rest of the path, slashes included.
 */
function pathParameters(urlPattern: string, spec: RouteSpec, id: string, schemas: Record<string, Json>): Json[] {
  const declared = spec.params ? propertiesOf(jsonSchemaOf(spec.params, `${id}_params`, schemas)) : undefined;
  return [...urlPattern.matchAll(/\[(\[?)(\.\.\.)?([^\]]+)\]?\]/g)].map(([, , rest, name]) => ({
    name,
    in: "path",
    required: true,
    schema: declared?.properties[name] ?? { type: "string" },
    ...(rest ? { description: "the rest of the path (may hold /)" } : {}),
  }));
}

/**
 * Query or header parameters from an object schema, one per property with its schema and whether it is
 * required. A schema that is not an object in JSON Schema is one parameter holding the whole object
 * (style form, explode: OpenAPI's way to say "these properties as separate query parameters").
 */
function objectParameters(where: "query" | "header", schema: z.ZodType | undefined, id: string, schemas: Record<string, Json>): Json[] {
  if (!schema) return [];
  const json = jsonSchemaOf(schema, `${id}_${where}`, schemas);
  const props = propertiesOf(json);
  if (!props) return where === "query" ? [{ name: "query", in: "query", style: "form", explode: true, schema: json }] : [];
  return Object.entries(props.properties).map(([name, s]) => ({
    name,
    in: where,
    required: props.required.includes(name),
    schema: s,
    ...(typeof s.description === "string" ? { description: s.description } : {}),
  }));
}

function propertiesOf(json: Json): { properties: Record<string, Json>; required: string[] } | undefined {
  if (typeof json.properties !== "object" || json.properties === null) return undefined;
  return { properties: json.properties as Record<string, Json>, required: Array.isArray(json.required) ? (json.required as string[]) : [] };
}

const ERROR_TEXT: Record<number, string> = {
  400: "Bad request: the body is not JSON or not UTF-8 (`malformed_json`), a path segment is not valid percent-encoding (`malformed_path`), or a value the route refuses",
  401: "Unauthorized: no credentials (where the route needs them), a wrong or revoked API key, or an ended session",
  403: "Forbidden: the caller's role or scopes do not allow this, or a signed-in change came from another origin",
  404: "Not found: the thing named does not exist (the code says which)",
  409: "Conflict: the thing is in a state that does not allow this (the code says which)",
  413: "Payload too large: the body exceeds the route's limit",
  415: "Unsupported media type: send Content-Type: application/json",
  422: "Unprocessable: a field of the path, query, headers or body is refused (`invalid_request`, details.fields names each), a NUL in the URL, or a rule of the domain",
  429: "Too many attempts: try again after Retry-After seconds",
  500: "Internal error: nothing is leaked; the server log has it",
  503: "Database unavailable: retry after Retry-After seconds",
};

const RETRY_AFTER = { description: "seconds to wait before retrying", schema: { type: "integer", minimum: 0 } };

function responsesOf(op: RouteOperation, path: string, spec: RouteSpec, id: string, schemas: Record<string, Json>): Json {
  const out: Record<string, Json> = {};
  const own = spec.responses ?? { 200: { description: "OK: a JSON object" } };
  for (const [status, r] of Object.entries(own)) out[status] = responseOf(r, `${id}_${status}`, schemas);

  // 401 on every route: a public one refuses an Authorization header that is not a valid key too (route.ts
  // authenticate), and 422 too: a NUL in the URL is refused before any schema is read.
  const errors = new Set<number>([401, 422, 500, 503, ...(spec.errors ?? [])]);
  if ("allow" in op.handler.access) errors.add(403);
  if (spec.body) [400, 413, 415].forEach((s) => errors.add(s));
  if (spec.rawBody) errors.add(413);
  if (path.includes("{")) errors.add(400);
  for (const status of [...errors].sort((a, b) => a - b)) {
    if (out[status]) continue; // the route answers it with a body of its own (a claim's 409 outcome)
    out[status] = {
      description: ERROR_TEXT[status] ?? `HTTP ${status}`,
      ...(status === 503 || status === 429 ? { headers: { "Retry-After": RETRY_AFTER } } : {}),
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
    };
  }
  return out;
}

function responseOf(r: RouteResponse, name: string, schemas: Record<string, Json>): Json {
  if (r.contentType === null) return { description: r.description };
  const type = r.contentType ?? "application/json";
  const schema = r.schema ? jsonSchemaOf(r.schema, name, schemas, "output") : type === "application/json" ? { type: "object" } : { type: "string" };
  return { description: r.description, content: { [type]: { schema } } };
}

/**
 * A zod schema as JSON Schema (2020-12, the dialect of OpenAPI 3.1), the input side for what a caller sends, the output side for what a route answers. Definitions zod
 * extracts (recursive parts) move to components.schemas under `name`, their references rewritten. A
 * schema zod cannot convert at all reads as "any value", with why.
 */
function jsonSchemaOf(schema: z.ZodType, name: string, schemas: Record<string, Json>, io: "input" | "output" = "input"): Json {
  let json: Json;
  try {
    json = z.toJSONSchema(schema, { io, target: "draft-2020-12", unrepresentable: "any" }) as Json;
  } catch (err) {
    return { description: `not expressible as JSON Schema (${err instanceof Error ? err.message : String(err)}); see the error on a refused value` };
  }
  delete json.$schema;
  const defs = (json.$defs ?? {}) as Record<string, Json>;
  delete json.$defs;
  const ref = (def: string) => `#/components/schemas/${name}_${def.replace(/[^A-Za-z0-9._-]/g, "_")}`;
  const rewrite = <T>(v: T): T => {
    if (Array.isArray(v)) return v.map(rewrite) as T;
    if (typeof v !== "object" || v === null) return v;
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => [
        k,
        k === "$ref" && typeof x === "string" ? (x === "#" ? `#/components/schemas/${name}` : x.replace(/^#\/\$defs\/(.+)$/, (_, d: string) => ref(d))) : rewrite(x),
      ]),
    ) as T;
  };
  for (const [def, s] of Object.entries(defs)) schemas[ref(def).slice("#/components/schemas/".length)] = rewrite(s);
  const out = rewrite(json);
  // A self-reference (`$ref: "#"`) needs the schema itself among the components.
  if (JSON.stringify(out).includes(`"#/components/schemas/${name}"`)) {
    schemas[name] = out;
    return { $ref: `#/components/schemas/${name}` };
  }
  return out;
}
