/**
 * Responses declared as schemas: route() holds what a route answers to what it declares (in development
 * and tests: every in-process API test checks each answer it gets), and the API description carries a
 * success answer with a schema (or a media type) for every operation.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ANY_MEDIA_TYPE, json, route } from "@/lib/http/route";
import { GET as openApiRoute } from "@/app/api/v1/openapi.json/route";

const declared = z.object({ n: z.number().int() });
const answering = (make: () => Response) =>
  route(async () => make(), {
    public: "a test route",
    responses: {
      200: { description: "n", schema: declared },
      202: { description: "a CSV", contentType: "text/csv" },
    },
  });
const call = (h: ReturnType<typeof answering>) => h(new Request("http://localhost/api/v1/test-route"));

afterEach(() => vi.restoreAllMocks());

describe("route() checks each answer against its declared response (outside production)", () => {
  it("passes an answer its schema accepts through untouched", async () => {
    const res = await call(answering(() => json({ n: 3 })));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ n: 3 });
  });

  it("turns a body its schema refuses into a 500 with the one error body, and logs what differs", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await call(answering(() => json({ n: "three" })));
    expect(res.status).toBe(500);
    expect((await res.json()).error.code).toBe("internal_error");
    expect(String(logged.mock.calls[0]?.[1])).toMatch(/response check: GET \/api\/v1\/test-route answered 200 with a body its declared schema refuses: n: /);
  });

  it("turns an answer of another media type than declared into a 500", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await call(answering(() => json({ n: 1 }, 202)));
    expect(res.status).toBe(500);
    expect(String(logged.mock.calls[0]?.[1])).toMatch(/answered 202 as application\/json, declared text\/csv/);
    const csv = await call(answering(() => new Response("a,b\n", { status: 202, headers: { "content-type": "text/csv; charset=utf-8" } })));
    expect(csv.status).toBe(202);
    expect(await csv.text()).toBe("a,b\n");
  });

  it("takes any media type where the route declares ANY_MEDIA_TYPE (bytes with a type of their own), but not none", async () => {
    const bytes = (type: string | null) =>
      route(async () => new Response(type === null ? new Blob([new Uint8Array([1, 2])]).stream() : '{"a":1}', { headers: type === null ? {} : { "content-type": type } }), {
        public: "a test route",
        responses: { 200: { description: "stored bytes", contentType: ANY_MEDIA_TYPE } },
      });
    for (const type of ["application/json", "image/png", "text/xml; charset=utf-8"]) {
      const res = await call(bytes(type));
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
    }
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await call(bytes(null))).status).toBe(500);
    expect(String(logged.mock.calls[0]?.[1])).toMatch(/answered 200 as no content type, declared \*\/\*/);
  });

  it("leaves statuses the route does not declare (the one error body) alone", async () => {
    const res = await call(answering(() => json({ error: { code: "x", message: "y" } }, 409)));
    expect(res.status).toBe(409);
  });
});

type Operation = { responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }> };


describe("the API description", () => {
  it("declares a success answer with a schema, or its media type, for every operation", async () => {
    const doc = (await (await openApiRoute(new Request("http://localhost/api/v1/openapi.json"))).json()) as { paths: Record<string, Record<string, Operation>> };
    const missing: string[] = [];
    let operations = 0;
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        operations++;
        const successes = Object.entries(op.responses).filter(([status]) => Number(status) >= 200 && Number(status) < 400);
        // No success at all is declared on purpose (`responses: {}`: the /api fallback answers only errors).
        const described = successes.every(([, r]) => {
          if (!r.content) return true; // no body (a redirect)
          return Object.entries(r.content).every(([type, c]) => !type.endsWith("json") || (c.schema !== undefined && JSON.stringify(c.schema) !== '{"type":"object"}'));
        });
        if (!described) missing.push(`${method.toUpperCase()} ${p}`);
      }
    }
    expect(operations).toBeGreaterThan(40);
    // None is described in words only: every JSON success answer carries its schema (lib/<domain>/schema.ts).
    expect(missing.sort()).toEqual([]);
  });
});
