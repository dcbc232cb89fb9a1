/** GET /api/v1/source-names against a real PostgreSQL: every source's name, by name, and nothing else; read access only. */
import { describe, expect, it } from "vitest";
import { GET } from "@/app/api/v1/source-names/route";
import { sourceNamesSchema } from "@/lib/sources/schema";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { makeApiKey } from "@/test/setup/http";

const get = (key?: string) => GET(new Request("http://localhost/api/v1/source-names", { headers: key ? { authorization: `Bearer ${key}` } : {} }));

describe("GET /api/v1/source-names", () => {
  it("answers every source's name in the database's name order, without any setting", async () => {
    const prefix = uniq("names");
    for (const n of ["b", "a", "c"]) await makeSource(3600, `${prefix}-${n}`);
    const { key } = await makeApiKey(["read"]);
    const res = await get(key);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(Object.keys(body)).toEqual(["names"]);
    const { names } = sourceNamesSchema.parse(body);
    expect(names.filter((n) => n.startsWith(prefix))).toEqual([`${prefix}-a`, `${prefix}-b`, `${prefix}-c`]);
    // Every source, in the order PostgreSQL sorts them (others' sources included: the database is shared).
    const all = await sql<{ name: string }>("SELECT name FROM sources WHERE name = ANY($1) ORDER BY name", [names]);
    expect(all.map((r) => r.name)).toEqual(names);
  });

  it("refuses an anonymous caller (401) and a key that may not read (403)", async () => {
    expect((await get()).status).toBe(401);
    const { key } = await makeApiKey(["claims:write"]);
    expect((await get(key)).status).toBe(403);
  });
});
