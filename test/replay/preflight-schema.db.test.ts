/**
 * The preflight answer's zod schema (lib/replay/schema.ts preflightSchema, issue 23): the routes' real
 * answers match it field for field (nothing the schema leaves out, nothing it names missing), the API
 * description takes it from the routes, and the console's calls (components/replay/queries.ts) parse
 * their answers with it: here through the real route handlers, and refusing an answer without its checks.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import * as preflightModule from "@/app/api/v1/replays/preflight/route";
import * as extendModule from "@/app/api/v1/replays/preflight/[id]/extend/route";
import { buildOpenApiDocument, operationsOf } from "@/lib/openapi/document";
import { preflightSchema } from "@/lib/replay/schema";
import { ApiError } from "@/components/api";
import { extendPreflight, runPreflight } from "@/components/replay/queries";
import { claimEvent } from "@/lib/claims/claim";
import { makeSource, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";
import { readyForReplay, seedDeadLetters } from "@/test/setup/replay";

const keys = (o: object) => Object.keys(o).sort();

/** The console's fetch, answered by the real route handler of `path` (an operator's API key in place of the session cookie); `alter` changes the answer. */
function routeFetch(key: string, alter: (body: Record<string, unknown>) => Record<string, unknown> = (b) => b) {
  vi.stubGlobal("fetch", async (path: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${key}`);
    const req = new Request(`http://localhost${path}`, { ...init, headers });
    const id = path.match(/preflight\/([^/]+)\/extend$/)?.[1];
    const res = id ? await extendModule.POST(req, { params: Promise.resolve({ id }) }) : await preflightModule.POST(req, { params: Promise.resolve({}) });
    return Response.json(alter(await res.json()), { status: res.status });
  });
}
afterEach(() => vi.unstubAllGlobals());

async function letters() {
  const source = await makeSource(7 * 86400);
  await readyForReplay(source, "http://127.0.0.1:9/never");
  const alive = uniq("alive");
  await claimEvent({ source, eventId: alive, eventType: "t" });
  await seedDeadLetters(source, [alive, uniq("fresh")]);
  return source;
}

describe("the preflight's response schema", () => {
  it("is what the route answers, field for field, and what the API description says", async () => {
    const key = (await makeApiKey(["operator"])).key;
    const source = await letters();
    routeFetch(key);
    const pf = await runPreflight({ source });
    expect(pf.counts).toMatchObject({ alive: 1, never_processed: 1, total: 2 });
    // The raw answer has exactly the schema's fields, at every level.
    let raw: Record<string, unknown> = {};
    routeFetch(key, (b) => (raw = b));
    await runPreflight({ source });
    expect(keys(raw)).toEqual(keys(preflightSchema.shape));
    expect(keys((raw.items as object[])[0])).toEqual(keys(preflightSchema.shape.items.element.shape));
    expect(keys((raw.checks as object[])[0])).toEqual(keys(preflightSchema.shape.checks.element.shape));
    expect(keys(raw.counts as object)).toEqual(keys(preflightSchema.shape.counts.shape));
    expect(preflightSchema.safeParse(raw).success).toBe(true);
    const extended = await extendPreflight(pf.preflightId);
    expect(extended.preflight.extendedAt).not.toBeNull();

    const doc = buildOpenApiDocument(operationsOf([{ urlPattern: "/api/v1/replays/preflight", module: preflightModule }]), { version: "t" }) as {
      paths: Record<string, { post: { responses: Record<string, { content: Record<string, { schema: { properties: Record<string, unknown> } }> }> } }>;
    };
    const declared = doc.paths["/api/v1/replays/preflight"].post.responses["201"].content["application/json"].schema;
    expect(keys(declared.properties)).toEqual(keys(preflightSchema.shape));
  });

  it("the console refuses an answer that does not match it (no checks) instead of showing a preflight without its readiness", async () => {
    const key = (await makeApiKey(["operator"])).key;
    const source = await letters();
    routeFetch(key, ({ checks: _checks, ...rest }) => rest);
    const refused = await runPreflight({ source }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ code: "unexpected_response" });
    routeFetch(key, (b) => ({ ...b, ready: "yes" }));
    await expect(runPreflight({ source })).rejects.toMatchObject({ code: "unexpected_response" });
  });
});
