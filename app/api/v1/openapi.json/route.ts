/**
 * GET /api/v1/openapi.json — the API described as OpenAPI 3.1: every route with its access, input schemas
 * and error answers, generated from the routes themselves (lib/openapi/document.ts) via the manifest beside
 * this file (`npm run openapi:manifest` after adding a route). Public: it holds no data, and tools (code
 * generators, API explorers) fetch it before they have a key.
 */
import { z } from "zod";
import pkg from "@/package.json";
import { buildOpenApiDocument, operationsOf } from "@/lib/openapi/document";
import { json, route } from "@/lib/http/route";
import { ROUTE_MODULES } from "./route-modules";

/** The outline of an OpenAPI 3.1 document (its validator, @readme/openapi-parser, checks the rest in the tests). */
const openApiDocumentSchema = z.looseObject({
  openapi: z.string().startsWith("3.1"),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.looseObject({ operationId: z.string(), responses: z.record(z.string(), z.unknown()) }))),
});

export const GET = route(async () => json(openApiDocument()), {
  public: "the API's description holds no data; clients and code generators read it before they have a key",
  summary: "This API's OpenAPI 3.1 description",
  responses: { 200: { description: "The OpenAPI 3.1 document (this one)", schema: openApiDocumentSchema } },
});

let built: ReturnType<typeof buildOpenApiDocument> | undefined;

/** Built once per process: the routes do not change while it runs. This route adds itself (no self-import). */
function openApiDocument() {
  built ??= buildOpenApiDocument(
    operationsOf([...ROUTE_MODULES, { urlPattern: "/api/v1/openapi.json", module: { GET } }]),
    { version: pkg.version },
  );
  return built;
}
