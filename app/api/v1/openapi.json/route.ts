/**
 * GET /api/v1/openapi.json — the API described as OpenAPI 3.1: every route with its access, input schemas
 * and error answers, generated from the routes themselves (lib/openapi/document.ts) via the manifest beside
 * this file (`npm run openapi:manifest` after adding a route). Public: it holds no data, and tools (code
 * generators, API explorers) fetch it before they have a key.
 */
import pkg from "@/package.json";
import { buildOpenApiDocument, operationsOf } from "@/lib/openapi/document";
import { json, route } from "@/lib/http/route";
import { ROUTE_MODULES } from "./route-modules";

export const GET = route(async () => json(openApiDocument()), {
  public: "the API's description holds no data; clients and code generators read it before they have a key",
  summary: "This API's OpenAPI 3.1 description",
  responses: { 200: { description: "The OpenAPI 3.1 document (this one)" } },
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
