/**
 * GET /api/v1/openapi.json (issue 16 §4), served by a real `keyward start`: a valid OpenAPI 3.1 document
 * (checked by @readme/openapi-parser) that holds every route file on disk with every method it exports
 * and the access it declares, built from the routes' own zod schemas (spot checks against the schemas'
 * rules, not against the generator), and whose operations declare every status the server answers them
 * with here (the fuzz campaign, test/http/fuzz.system.test.ts, holds the same rule over its hostile inputs). The
 * committed route manifest must be what `npm run openapi:manifest` writes.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overviewSchema } from "@/lib/overview/schema";
import { call, signedInUser, startTestServer } from "@/test/setup/auth";
import { isErrorBody, makeApiKey } from "@/test/setup/http";
import { ROOT, stopServer, type Server } from "@/test/setup/server";
import { concretePath, discoverExports, HTTP_METHODS, openApiPathOf, routeLabel, type RouteExport } from "@/test/setup/routes";

type Operation = {
  operationId: string;
  security: Record<string, string[]>[];
  parameters?: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody?: { required: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
  "x-keyward-allow"?: string[];
  "x-keyward-public"?: string;
};
type Schema = { type?: string; required?: string[]; properties?: Record<string, Schema>; $ref?: string; maxLength?: number; pattern?: string };
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>>; components: Record<string, Record<string, unknown>> };

// The walk below calls every route, "prune now" included, which would prune other files' expired keys.

const spawned: Server[] = [];
let baseUrl: string;
let doc: Doc;
let onDisk: RouteExport[];

const operation = (method: string, p: string): Operation | undefined => doc.paths[p]?.[method.toLowerCase()];
const declared = (op: Operation) => Object.keys(op.responses).map(Number);

beforeAll(async () => {
  onDisk = [...(await discoverExports()), ...(await discoverExports("app/metrics")), ...(await discoverExports("app/healthz")), ...(await discoverExports("app/readyz"))];
  ({ baseUrl } = await startTestServer(spawned));
  const res = await call<Doc>(baseUrl, "GET", "/api/v1/openapi.json");
  if (res.status !== 200) throw new Error(`GET /api/v1/openapi.json → ${res.status} ${res.text}`);
  doc = res.body;
}, 120_000);

afterAll(async () => {
  for (const s of spawned) await stopServer(s);
});

describe("the route manifest", () => {
  it("is what `npm run openapi:manifest` writes (every route file on disk, no other)", () => {
    let out = "";
    try {
      out = execFileSync(process.execPath, [path.join(ROOT, "scripts/openapi-manifest.mjs"), "--check"], { cwd: ROOT, encoding: "utf8", stdio: "pipe" });
    } catch (err) {
      const e = err as { stderr?: string; status?: number };
      expect.fail(`scripts/openapi-manifest.mjs --check exited ${e.status}: ${e.stderr}`);
    }
    expect(out).toContain("up to date");
  });
});

describe("GET /api/v1/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document, and the validator does refuse a broken one", async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
    expect(result.valid).toBe(true);
    // The same document with a path parameter left undeclared must fail: the validator checks what we rely on.
    const broken = structuredClone(doc);
    delete broken.paths["/api/v1/sources/{name}"].get.parameters;
    expect((await validate(broken as never)).valid).toBe(false);
  });

  it("holds every route file on disk with each method it exports and the access it declares, and nothing else", () => {
    expect(onDisk.length).toBeGreaterThan(50);
    const missing: string[] = [];
    const wrongAccess: string[] = [];
    for (const r of onDisk) {
      const op = operation(r.method, openApiPathOf(r.urlPattern));
      if (!op) {
        missing.push(`${routeLabel(r)} (${r.file})`);
        continue;
      }
      const access = r.access as { allow?: string[]; public?: string };
      if (access.public !== undefined ? op["x-keyward-public"] !== access.public : JSON.stringify(op["x-keyward-allow"]) !== JSON.stringify(access.allow)) {
        wrongAccess.push(routeLabel(r));
      }
    }
    expect(missing, "routes missing from the document: run `npm run openapi:manifest` (and rebuild)").toEqual([]);
    const unsummarised = onDisk.filter((r) => {
      const summary = (operation(r.method, openApiPathOf(r.urlPattern)) as { summary?: string } | undefined)?.summary;
      return !summary || summary.startsWith(`${r.method} /`);
    });
    expect(unsummarised.map(routeLabel), "give each route() a one-line `summary`").toEqual([]);
    expect(wrongAccess).toEqual([]);
    const expected = new Set(onDisk.map((r) => `${r.method.toLowerCase()} ${openApiPathOf(r.urlPattern)}`));
    const extra = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`)).filter((k) => !expected.has(k));
    expect(extra, "operations with no route file").toEqual([]);
    expect(operation("GET", "/api/v1/openapi.json"), "the document describes itself").toBeDefined();
    expect(operation("GET", "/metrics")).toBeDefined();
    expect(operation("GET", "/healthz")).toBeDefined();
    expect(operation("GET", "/readyz")).toBeDefined();
  });

  it("says the package's version", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(doc.info.version).toBe(pkg.version);
  });

  it("takes its schemas from the routes' zod schemas", () => {
    // POST /api/v1/claims: lib/claims/schema.ts claimRequest (strict, eventId 1..255 characters).
    const claim = operation("POST", "/api/v1/claims")!.requestBody!;
    expect(claim.required).toBe(true);
    const body = claim.content["application/json"].schema;
    expect(body.required).toEqual(expect.arrayContaining(["source", "eventId", "eventType"]));
    expect(body.required).not.toContain("leaseSeconds");
    expect(body.properties!.eventId.maxLength).toBe(255);
    expect(Object.keys(body.properties!).sort()).toEqual(["attemptId", "eventId", "eventType", "leaseSeconds", "payloadHash", "source"]);

    // A path parameter parsed by sourceParams, with its pattern.
    const name = operation("GET", "/api/v1/sources/{name}")!.parameters!.find((p) => p.name === "name")!;
    expect(name).toMatchObject({ in: "path", required: true });
    expect(name.schema.pattern).toBe("^[a-z0-9][a-z0-9_-]{0,63}$");
    // A route without a params schema still declares its segment.
    expect(operation("DELETE", "/api/v1/api-keys/{id}")!.parameters).toEqual([expect.objectContaining({ name: "id", in: "path", required: true })]);

    // Query and header parameters.
    const audit = operation("GET", "/api/v1/audit")!.parameters!.filter((p) => p.in === "query").map((p) => p.name);
    expect(audit).toEqual(expect.arrayContaining(["source", "eventId", "from", "to", "limit", "cursor"]));
    expect(operation("POST", "/api/v1/replays")!.parameters).toEqual([expect.objectContaining({ name: "idempotency-key", in: "header" })]);

    // An optional body (every field optional) is not required.
    expect(operation("POST", "/api/v1/maintenance/prune")!.requestBody!.required).toBe(false);

    // A response schema where lib has one: GET /api/v1/overview is lib/overview/schema.ts overviewSchema.
    const overview = operation("GET", "/api/v1/overview")!.responses["200"].content!["application/json"].schema;
    expect(Object.keys(overview.properties!).sort()).toEqual(Object.keys(overviewSchema.shape).sort());
  });

  it("errors have the one shape, and each route's security follows its access", () => {
    const error = doc.components.schemas.Error as Schema;
    expect(error.required).toEqual(["error"]);
    expect(error.properties!.error.required).toEqual(["code", "message"]);

    const publicOp = operation("GET", "/api/v1/session")!;
    expect(publicOp.security).toEqual([]);
    expect(publicOp.responses["403"]).toBeUndefined();
    const admin = operation("PATCH", "/api/v1/users/{username}")!;
    expect(admin.security).toEqual([{ apiKey: [] }, { session: [] }]);
    expect(admin["x-keyward-allow"]).toEqual(["admin"]);
    expect(declared(admin)).toEqual(expect.arrayContaining([401, 403, 404, 409, 413, 415, 422, 500, 503]));
    expect(admin.responses["401"].content!["application/json"].schema.$ref).toBe("#/components/schemas/Error");
    expect(doc.components.securitySchemes).toMatchObject({
      apiKey: { type: "http", scheme: "bearer" },
      session: { type: "apiKey", in: "cookie", name: "keyward.session_token" },
    });
    // A claim's 409 is an outcome with the claim's own body, not the error shape.
    expect(operation("POST", "/api/v1/claims")!.responses["409"].content!["application/json"].schema.$ref).toBeUndefined();
    expect(declared(operation("POST", "/api/v1/claims")!)).toEqual(expect.arrayContaining([200, 201, 409]));
  });
});

describe("every operation declares the statuses the server answers it with", () => {
  it("anonymous, signed in with a broken body, and with a NUL in the query", async () => {
    const admin = await signedInUser(baseUrl, "admin");
    const key = await makeApiKey(["claims:write", "deadletters:write", "operator"]);
    const undeclared: string[] = [];
    const shapes: string[] = [];
    let calls = 0;
    for (const r of onDisk.filter((x) => (HTTP_METHODS as readonly string[]).includes(x.method))) {
      if (routeLabel(r) === "DELETE /api/v1/session") continue; // would end the admin session the walk uses
      const op = operation(r.method, openApiPathOf(r.urlPattern))!;
      const p = concretePath(r.urlPattern);
      const withBody = r.method !== "GET";
      for (const [what, o] of [
        ["anonymous", { body: withBody ? {} : undefined }],
        ["admin session, NUL in the query", { cookie: admin.cookie, origin: baseUrl, q: "?x=%00", body: withBody ? {} : undefined }],
        ["API key, empty body", { key: key.key, body: withBody ? {} : undefined }],
        ["API key, broken JSON", { key: key.key, raw: withBody ? "{" : undefined }],
      ] as const) {
        const headers: Record<string, string> = {};
        if ("cookie" in o) Object.assign(headers, { cookie: o.cookie, origin: o.origin });
        if ("key" in o) headers.authorization = `Bearer ${o.key}`;
        const body = "raw" in o ? o.raw : o.body === undefined ? undefined : JSON.stringify(o.body);
        if (body !== undefined) headers["content-type"] = "application/json";
        const res = await fetch(baseUrl + p + ("q" in o ? o.q : ""), { method: r.method, headers, body, redirect: "manual" });
        const text = await res.text();
        calls++;
        if (!op.responses[String(res.status)]) undeclared.push(`${routeLabel(r)} [${what}] → ${res.status} ${text.slice(0, 120)}`);
        else if (op.responses[String(res.status)].content?.["application/json"]?.schema.$ref === "#/components/schemas/Error" && !isErrorBody(JSON.parse(text))) {
          shapes.push(`${routeLabel(r)} [${what}] → ${res.status} is declared as the error body but is ${text.slice(0, 120)}`);
        }
      }
    }
    expect(calls).toBeGreaterThan(200);
    expect(undeclared, "statuses an operation answers but does not declare (add them to its route's `errors`)").toEqual([]);
    expect(shapes).toEqual([]);
  }, 120_000);
});
