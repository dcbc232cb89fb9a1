/**
 * The global search (GET /api/v1/search, lib/search/search.ts) on the real database: an event id exactly
 * or by its beginning (from the audit history, also after its key is gone), a dead letter by its id, the
 * first 8 characters of it or its event id, a source by part of its name; exact hits first; LIKE's own
 * characters matched literally; bad input is a 422 naming `q`; only readers may search. Replays are found
 * on the demo's data in the browser test (test/e2e/every-page.e2e.test.ts).
 */
import { describe, expect, it } from "vitest";
import { GET } from "@/app/api/v1/search/route";
import { searchResponse } from "@/lib/search/schema";
import { makeApiKey } from "@/test/setup/http";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { seedDeadLetters } from "@/test/setup/replay";
import type { Json } from "@/test/setup/json";

async function search(q: string, key: string): Promise<{ status: number; body: Json }> {
  const res = await GET(new Request(`http://localhost/api/v1/search?${new URLSearchParams({ q })}`, { headers: { authorization: `Bearer ${key}` } }));
  return { status: res.status, body: await res.json() };
}

describe("GET /api/v1/search", () => {
  it("finds an event by its id or its beginning, a dead letter by id, id prefix or event id, a source by part of its name", async () => {
    const { key } = await makeApiKey(["read"]);
    const source = await makeSource(3600, uniq("searchsrc"));
    const stem = `ord_${uniq("s").replace("-", "_")}`;
    const [a, b] = [`${stem}_ZN1ac7`, `${stem}_ZN1ac8`];
    // Both events were claimed; their keys are long gone (only the audit history remembers them).
    await sql(
      `INSERT INTO audit_events (at, source, event_id, event_type, kind, actor) VALUES
         (now() - interval '3 days', $1, $2, 'order.paid', 'claimed', 'apikey:shop'),
         (now() - interval '2 days', $1, $3, 'order.paid', 'claimed', 'apikey:shop'),
         (now() - interval '1 day', $1, $3, 'order.paid', 'completed', 'apikey:shop')`,
      [source, a, b],
    );
    const [letter] = await seedDeadLetters(source, [a]);

    const exact = await search(a, key);
    expect(exact.status).toBe(200);
    expect(searchResponse.safeParse(exact.body).success).toBe(true);
    const kinds = exact.body.results.map((r: { kind: string; href: string }) => `${r.kind} ${r.href}`);
    expect(kinds).toContain(`event /events/${source}/${a}`);
    expect(kinds).toContain(`dead_letter /dead-letters/${letter}`);
    expect(exact.body.results[0].label).toBe(a); // exact hits first

    const prefix = await search(stem, key);
    const events = prefix.body.results.filter((r: { kind: string }) => r.kind === "event");
    expect(events.map((r: { label: string }) => r.label).sort()).toEqual([a, b]);
    // One row per event (b has two audit rows), with its latest entry's time.
    expect(Date.parse(events.find((r: { label: string }) => r.label === b).at)).toBeGreaterThan(Date.now() - 1.5 * 86400_000);

    const byLetterId = await search(letter.slice(0, 8), key);
    expect(byLetterId.body.results.map((r: { href: string }) => r.href)).toContain(`/dead-letters/${letter}`);

    const bySource = await search(source.slice(3), key);
    expect(bySource.body.results).toContainEqual({ kind: "source", label: source, detail: "source", at: null, href: `/sources/${source}` });
  });

  it("matches % and _ literally, not as LIKE wildcards", async () => {
    const { key } = await makeApiKey(["read"]);
    const source = await makeSource(3600, uniq("searchlit"));
    const id = `${uniq("lit")}_x`;
    await sql(`INSERT INTO audit_events (source, event_id, event_type, kind, actor) VALUES ($1, $2, 't', 'claimed', 'test')`, [source, id]);
    const like = await search(id.replace("_x", "%"), key);
    expect(like.body.results.filter((r: { kind: string }) => r.kind === "event")).toEqual([]);
    const underscore = await search(`${id.slice(0, -2)}_`, key);
    expect(underscore.body.results.map((r: { label: string }) => r.label)).toContain(id);
  });

  it("refuses an empty or too long query with a 422 naming q, and a caller who may not read", async () => {
    const { key } = await makeApiKey(["read"]);
    for (const q of ["   ", "x".repeat(201)]) {
      const r = await search(q, key);
      expect(r.status).toBe(422);
      expect(JSON.stringify(r.body.error.details)).toContain("q");
    }
    const writer = await makeApiKey(["claims:write"]);
    expect((await search("x", writer.key)).status).toBe(403);
    const anon = await GET(new Request("http://localhost/api/v1/search?q=x"));
    expect(anon.status).toBe(401);
  });
});
