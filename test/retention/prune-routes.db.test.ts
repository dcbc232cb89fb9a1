/**
 * The pruning routes, called in-process as Next calls them: POST /api/v1/maintenance/prune (operators,
 * recorded as `prune.run`), GET (the run list, readers), and the external scheduler's route guarded by
 * KEYWARD_MAINTENANCE_SECRET (404 while unset, 401 when wrong). In a database of its own, since a run
 * prunes the whole table.
 */
import { afterEach, describe, expect, it } from "vitest";
import { GET as listRoute, POST as pruneRoute } from "@/app/api/v1/maintenance/prune/route";
import { POST as externalRoute } from "@/app/api/v1/maintenance/prune/external/route";
import { makeSource, sql } from "@/test/setup/db";
import { isErrorBody, makeApiKey, post, type Called } from "@/test/setup/http";
import { countKeys, insertKeys } from "@/test/setup/keys";
import type { Json } from "@/test/setup/json";


const SECRET = "s3cret-for-the-external-scheduler-0123456789";

afterEach(() => {
  delete process.env.KEYWARD_MAINTENANCE_SECRET;
});

async function call(
  handler: (req: Request) => Promise<Response>,
  init: { method?: string; path?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Called> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const req = new Request(`http://localhost${init.path ?? "/api/v1/maintenance/prune"}`, {
    method: init.method ?? "POST",
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const res = await handler(req);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

function expectError(res: Called, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(isErrorBody(res.body)).toBe(true);
  expect(res.body.error.code).toBe(code);
}

describe("POST /api/v1/maintenance/prune", () => {
  it("operator: runs a bounded prune, answers rows, batches and rows/s, and records prune.run", async () => {
    const source = await makeSource();
    await insertKeys(source, 250, "now() - interval '1 hour'");
    await insertKeys(source, 5, "now() + interval '1 hour'", "live");
    const operator = await makeApiKey(["operator"]);

    const res = await post(pruneRoute, { batchSize: 100, pauseMs: 0 }, { key: operator.key });

    expect(res.status).toBe(200);
    expect(res.body.run).toMatchObject({ rows: 250, batches: 3, trigger: "api", actor: `apikey:${operator.name}`, stopped: "drained" });
    expect(res.body.run.rowsPerSecond).toBeGreaterThan(0);
    expect(await countKeys(source)).toBe(5);
    const actions = await sql<{ actor: string; detail: Json }>(
      "SELECT actor, detail FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'prune.run' AND actor = $1",
      [`apikey:${operator.name}`],
    );
    expect(actions).toHaveLength(1);
    expect(actions[0].detail).toMatchObject({
      action: "prune.run",
      outcome: "ok",
      target: { type: "prune_run", id: res.body.run.id },
      after: { rows: 250, batches: 3 },
    });
  });

  it("works without a body (the configured defaults)", async () => {
    const operator = await makeApiKey(["operator"]);
    const res = await call(pruneRoute, { headers: bearer(operator.key) });
    expect(res.status).toBe(200);
    expect(res.body.run.stopped).toBe("drained");
  });

  it("a reader is refused (403), no caller 401, bad options 422 naming the field", async () => {
    const reader = await makeApiKey(["read"]);
    const operator = await makeApiKey(["operator"]);
    expectError(await post(pruneRoute, {}, { key: reader.key }), 403, "forbidden");
    expectError(await post(pruneRoute, {}), 401, "unauthorized");
    const bad = await post(pruneRoute, { batchSize: 0, budgetMs: "fast" }, { key: operator.key });
    expectError(bad, 422, "invalid_request");
    expect(bad.body.error.details.fields.map((f: { field: string }) => f.field).sort()).toEqual(["batchSize", "budgetMs"]);
    expectError(await post(pruneRoute, { everything: true }, { key: operator.key }), 422, "invalid_request");
  });
});

describe("GET /api/v1/maintenance/prune", () => {
  it("lists recent runs newest first with rows/s, to readers", async () => {
    const operator = await makeApiKey(["operator"]);
    const reader = await makeApiKey(["read"]);
    const source = await makeSource();
    await insertKeys(source, 40, "now() - interval '1 hour'");
    const first = await post(pruneRoute, { pauseMs: 0 }, { key: operator.key });
    const second = await post(pruneRoute, { pauseMs: 0 }, { key: operator.key });

    const res = await call(listRoute, { method: "GET", path: "/api/v1/maintenance/prune?limit=2", headers: bearer(reader.key) });

    expect(res.status).toBe(200);
    expect(res.body.mode).toBe("single"); // the dedup table's mode: these runs deleted in batches
    expect(res.body.runs.map((r: { id: string }) => r.id)).toEqual([second.body.run.id, first.body.run.id]);
    expect(res.body.runs[1]).toEqual(first.body.run);
    expect(res.body.runs[1]).toMatchObject({ rows: 40, mode: "batch", trigger: "api" });
    expect(typeof res.body.runs[1].rowsPerSecond).toBe("number");
    expectError(await call(listRoute, { method: "GET", path: "/api/v1/maintenance/prune?limit=0", headers: bearer(reader.key) }), 422, "invalid_request");
    expectError(await call(listRoute, { method: "GET" }), 401, "unauthorized");
  });
});

describe("POST /api/v1/maintenance/prune/external", () => {
  const external = (headers: Record<string, string> = {}, body?: unknown) =>
    call(externalRoute, { path: "/api/v1/maintenance/prune/external", headers, body });

  it("is a 404 while KEYWARD_MAINTENANCE_SECRET is not set, whatever is sent", async () => {
    delete process.env.KEYWARD_MAINTENANCE_SECRET;
    expectError(await external(), 404, "not_found");
    expectError(await external({ "x-keyward-maintenance-secret": SECRET }), 404, "not_found");
  });

  it("with a secret configured: missing or wrong → 401 and nothing pruned; right → 200 and a run", async () => {
    process.env.KEYWARD_MAINTENANCE_SECRET = SECRET;
    const source = await makeSource();
    await insertKeys(source, 120, "now() - interval '1 hour'");

    expectError(await external(), 401, "unauthorized");
    expectError(await external({ "x-keyward-maintenance-secret": SECRET.slice(0, -1) }), 401, "unauthorized");
    expectError(await external({ "x-keyward-maintenance-secret": SECRET + "x" }), 401, "unauthorized");
    expectError(await external({ "x-keyward-maintenance-secret": "" }), 401, "unauthorized");
    expect(await countKeys(source)).toBe(120);

    const ok = await external({ "x-keyward-maintenance-secret": SECRET }, { batchSize: 50, pauseMs: 0 });
    expect(ok.status).toBe(200);
    expect(ok.body.run).toMatchObject({ rows: 120, batches: 3, trigger: "external", actor: "external", stopped: "drained" });
    expect(await countKeys(source)).toBe(0);
    // Not an operator action: a scheduler calling every minute would fill the action log.
    const [{ n }] = await sql<{ n: number }>(
      "SELECT count(*) AS n FROM audit_events WHERE kind = 'operator' AND detail->'target'->>'id' = $1 AND detail->>'action' = 'prune.run'",
      [ok.body.run.id],
    );
    expect(n).toBe(0);
  });

  it("declares why it is public", () => {
    expect(externalRoute.access).toEqual({ public: "external schedulers authenticate with KEYWARD_MAINTENANCE_SECRET" });
    expect(pruneRoute.access).toEqual({ allow: ["operator"] });
    expect(listRoute.access).toEqual({ allow: ["read"] });
  });
});
