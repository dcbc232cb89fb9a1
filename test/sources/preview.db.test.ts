/**
 * POST /api/v1/sources/{name}/preview: a dry run of PATCH with the same body — the same merge, refusals,
 * invariant checks and projection as a saved source — that saves and records nothing.
 */
import { describe, expect, it } from "vitest";
import { POST as previewRoute } from "@/app/api/v1/sources/[name]/preview/route";
import { cliPrincipal } from "@/lib/auth/principal";
import { createSource, sourceReports, updateSource } from "@/lib/sources/sources";
import { parseInput } from "@/lib/http/validate";
import { createSourceRequest } from "@/lib/sources/schema";
import { sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";

const D = 86400;

async function preview(name: string, body: unknown, key: string) {
  const res = await previewRoute(
    new Request(`http://localhost/api/v1/sources/${name}/preview`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    { params: Promise.resolve({ name }) },
  );
  return { status: res.status, body: await res.json() };
}

describe("POST /api/v1/sources/{name}/preview", () => {
  it("answers what the change would give, exactly as the saved source then reports it, and saves nothing", async () => {
    const { key } = await makeApiKey(["read"]);
    const name = uniq("pv");
    await createSource(parseInput(createSourceRequest, { name, preset: "stripe" }), cliPrincipal());
    const change = { retryWindowSeconds: 4 * D, deadLetterRetentionSeconds: 5 * D };
    const r = await preview(name, change, key);
    expect(r.status).toBe(200);
    expect(r.body.current.ttlSeconds).toBe(7 * D);
    expect(r.body.preview.ttlSeconds).toBe(8 * D);
    expect(r.body.preview.preset).toBeNull(); // the parts no longer match stripe
    const failing = r.body.preview.invariants.filter((i: { ok: boolean }) => !i.ok).map((i: { id: string }) => i.id);
    expect(failing).toEqual(["ttl_floor", "dead_letters_within_keys"]); // 4 d needs 14 d; 5 d of letters > 3 d of skew + replay

    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE source = $1 AND kind = 'operator'", [name]);
    const [before] = await sourceReports(name);
    expect(before.ttlSeconds).toBe(7 * D);
    // The saved change reports what the preview said.
    await updateSource(name, change, cliPrincipal());
    const [after] = await sourceReports(name);
    expect({ ttlSeconds: after.ttlSeconds, invariants: after.invariants, preset: after.preset }).toEqual({
      ttlSeconds: r.body.preview.ttlSeconds,
      invariants: r.body.preview.invariants,
      preset: r.body.preview.preset,
    });
    expect(after.projection.bytesPerKey).toBe(r.body.preview.projection.bytesPerKey);
    const [{ n: m }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE source = $1 AND kind = 'operator'", [name]);
    expect(m).toBe(n + 1); // the update is recorded; the preview was not
  });

  it("refuses what PATCH refuses (422 naming the field), and 404 for an unknown source", async () => {
    const { key } = await makeApiKey(["read"]);
    const name = uniq("pv");
    await createSource(parseInput(createSourceRequest, { name, preset: "saas" }), cliPrincipal());
    const tooLong = await preview(name, { retryWindowSeconds: 89 * D }, key);
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error.details.fields[0].field).toBe("ttlSeconds");
    const empty = await preview(name, {}, key);
    expect(empty.status).toBe(422);
    const unknown = await preview(name, { ttlSeconds: 5 }, key);
    expect(unknown.status).toBe(422);
    expect((await preview("no-such-source-pv", { retryWindowSeconds: D }, key)).status).toBe(404);
    const [{ ttl_seconds }] = await sql<{ ttl_seconds: number }>("SELECT ttl_seconds FROM sources WHERE name = $1", [name]);
    expect(ttl_seconds).toBe(3 * D);
  });
});
