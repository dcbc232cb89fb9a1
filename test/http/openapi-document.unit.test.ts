/**
 * lib/openapi/document.ts on its own (no server): schemas JSON Schema cannot express do not break the
 * document, recursive schemas become components it references, and the result still validates.
 */
import { validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { json, route } from "@/lib/http/route";
import { buildOpenApiDocument, openApiPath, operationsOf } from "@/lib/openapi/document";

type Node = { name: string; children: Node[] };
const node: z.ZodType<Node> = z.object({ name: z.string(), get children() {
  return z.array(node);
} });

const handler = route(async () => json({}), {
  allow: ["read"],
  params: z.strictObject({ id: z.string().transform((s) => Number(s)) }),
  query: z.strictObject({ at: z.date().optional(), n: z.coerce.number().int().default(5) }),
  body: z.strictObject({ tree: node, when: z.custom<Date>((v) => v instanceof Date), big: z.bigint().optional() }),
  summary: "a route with awkward schemas",
  errors: [404],
});

describe("buildOpenApiDocument", () => {
  it("turns Next patterns into OpenAPI paths", () => {
    expect(openApiPath("/api/v1/claims/[source]/[eventId]")).toBe("/api/v1/claims/{source}/{eventId}");
    expect(openApiPath("/api/auth/[...all]")).toBe("/api/auth/{all}");
    expect(openApiPath("/api/[[...path]]")).toBe("/api/{path}");
  });

  it("describes unrepresentable and recursive schemas without throwing, and the document validates", async () => {
    const doc = buildOpenApiDocument(operationsOf([{ urlPattern: "/x/[id]", module: { POST: handler } }]), { version: "9.9.9" }) as {
      paths: Record<string, { post: Record<string, unknown> }>;
      components: { schemas: Record<string, unknown> };
    };
    const op = doc.paths["/x/{id}"].post as {
      parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
      requestBody: { content: { "application/json": { schema: { properties: Record<string, Record<string, unknown>>; required: string[] } } } };
      responses: Record<string, unknown>;
    };
    // The input side: the transform's input (a string), the default makes n optional.
    expect(op.parameters.find((p) => p.name === "id")).toMatchObject({ in: "path", required: true, schema: { type: "string" } });
    expect(op.parameters.find((p) => p.name === "n")).toMatchObject({ in: "query", required: false });
    const body = op.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(expect.arrayContaining(["tree", "when"]));
    expect(body.properties.when).toEqual({}); // z.custom: any value
    // The recursive tree is a component the body references, and that component references itself.
    const refs = JSON.stringify(body.properties.tree) + JSON.stringify(doc.components.schemas);
    expect(refs).toMatch(/#\/components\/schemas\/postXId_body/);
    expect(refs).not.toContain("#/$defs/");
    expect(Object.keys(op.responses).map(Number).sort((a, b) => a - b)).toEqual([200, 400, 401, 403, 404, 413, 415, 422, 500, 503]);
    const result = await validate(structuredClone(doc) as never);
    expect(result.valid ? [] : result.errors).toEqual([]);
  });
});
