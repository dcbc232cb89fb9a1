/**
 * The one cursor codec (lib/pagination.ts): an opaque base64url-JSON position, declared per list; every
 * list answers { items, next } and takes ?cursor=; a hostile cursor is the route's 422 naming `cursor`,
 * on every list route alike, before any SQL.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { GET as actionsRoute } from "@/app/api/v1/actions/route";
import { GET as auditRoute } from "@/app/api/v1/audit/route";
import { GET as deadLettersRoute } from "@/app/api/v1/dead-letters/route";
import { GET as replaysRoute } from "@/app/api/v1/replays/route";
import { recordAction } from "@/lib/audit/actions";
import { CURSOR_MESSAGE, cursorParam, decodeCursor, encodeCursor, pageOf } from "@/lib/pagination";
import { uniq } from "@/test/setup/db";
import { isErrorBody, makeApiKey } from "@/test/setup/http";

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

describe("the codec", () => {
  const position = z.strictObject({ at: z.string(), id: z.string().regex(/^\d+$/) });
  const cursor = cursorParam(position);

  it("round-trips a position through an opaque base64url string", () => {
    const text = encodeCursor({ at: "2026-12-01T00:00:00.000001Z", id: "42" });
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(text)).toEqual({ at: "2026-12-01T00:00:00.000001Z", id: "42" });
    expect(cursor.parse(text)).toEqual({ at: "2026-12-01T00:00:00.000001Z", id: "42" });
  });

  it.each([
    ["not base64url", "a+b/c="],
    ["base64url of no JSON", b64("2026-12-01T00:00:00Z_1")],
    ["JSON of the wrong shape", b64({ at: "x" })],
    ["a field of the wrong form", b64({ at: "x", id: "-1" })],
    ["an unknown field", b64({ at: "x", id: "1", extra: true })],
    ["JSON null", b64("null")],
    ["too long", b64({ at: "x".repeat(500), id: "1" })],
    ["empty", ""],
  ])("refuses %s with the one message", (_, text) => {
    const r = cursor.safeParse(text);
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.message)).toEqual([CURSOR_MESSAGE]);
  });

  it("pageOf: items of one page, and a next cursor only when a row beyond the page was read", () => {
    const rows = [1, 2, 3].map((n) => ({ n }));
    const full = pageOf(rows, 2, (r) => r.n * 10, (last) => ({ n: String(last.n) }));
    expect(full.items).toEqual([10, 20]);
    expect(decodeCursor(full.next!)).toEqual({ n: "2" });
    expect(pageOf(rows, 3, (r) => r.n, (last) => ({ n: String(last.n) }))).toEqual({ items: [1, 2, 3], next: null });
    expect(pageOf([], 3, (r) => r, () => ({}))).toEqual({ items: [], next: null });
  });
});

type Handler = (req: Request, ctx?: { params: Promise<Record<string, string>> }) => Promise<Response>;

async function get(handler: Handler, path: string, key: string) {
  const res = await handler(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${key}` } }), {
    params: Promise.resolve({}),
  });
  return { status: res.status, body: await res.json() };
}

describe("every list route: ?cursor=, { items, next }, a hostile cursor is a 422 naming cursor", () => {
  const lists: [string, Handler, string][] = [
    ["/api/v1/audit", auditRoute, "?limit=1"],
    ["/api/v1/actions", actionsRoute, "?limit=1"],
    ["/api/v1/dead-letters", deadLettersRoute, "?limit=1"],
    ["/api/v1/replays", replaysRoute, "?limit=1"],
  ];
  const hostile = [
    "2026-12-01T00:00:00Z_1", // the audit's former plain-text cursor
    b64({ at: "0000-01-01T00:00:00Z", id: "1" }), // an impossible time
    b64({ at: "2026-12-01T00:00:00.000000Z", id: "99999999999999999999" }), // an id past bigint
    b64({ s: "failedAt", v: "2026-02-30T00:00:00Z", i: "11111111-1111-4111-8111-111111111111" }), // no such day
    b64({ s: "keyExpiry", v: "1", i: "not-a-uuid" }),
    b64("[]"),
    "%00",
    "x".repeat(1000),
  ];

  it("answers { items, next } and pages with the cursor it gave", async () => {
    const { key } = await makeApiKey(["operator", "deadletters:write"]);
    // At least two operator actions, so the action log has a second page.
    for (let i = 0; i < 2; i++) await recordAction(`cli:${uniq("pager")}`, { action: "test.pagination" });
    for (const [path, handler, query] of lists) {
      const first = await get(handler, `${path}${query}`, key);
      expect(first.status, path).toBe(200);
      expect(Array.isArray(first.body.items), path).toBe(true);
      expect(first.body, path).toHaveProperty("next");
      expect(first.body, path).not.toHaveProperty("nextCursor");
      if (first.body.next) {
        const second = await get(handler, `${path}${query}&cursor=${first.body.next}`, key);
        expect(second.status, path).toBe(200);
        expect(second.body.items[0], path).not.toEqual(first.body.items[0]);
      }
    }
    const actions = await get(actionsRoute, "/api/v1/actions?limit=1", key);
    expect(actions.body.next).toEqual(expect.any(String));
  });

  it("refuses a hostile cursor with 422 invalid_request naming cursor, on each list", async () => {
    const { key } = await makeApiKey(["operator"]);
    const failures: string[] = [];
    for (const [path, handler] of lists) {
      for (const c of hostile) {
        const res = await get(handler, `${path}?cursor=${encodeURIComponent(c)}`, key);
        const fields = res.body?.error?.details?.fields?.map((f: { field: string }) => f.field) ?? [];
        if (res.status !== 422 || !isErrorBody(res.body) || res.body.error.code !== "invalid_request" || !fields.includes("cursor")) {
          failures.push(`${path} cursor=${c.slice(0, 40)} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        }
      }
    }
    expect(failures).toEqual([]);
  });

  it("a dead-letter cursor of one sort is refused in the other", async () => {
    const { key } = await makeApiKey(["read"]);
    const byFailure = encodeCursor({ s: "failedAt", v: "2026-12-01T00:00:00.000Z", i: "11111111-1111-4111-8111-111111111111" });
    expect((await get(deadLettersRoute, `/api/v1/dead-letters?cursor=${byFailure}`, key)).status).toBe(200);
    const res = await get(deadLettersRoute, `/api/v1/dead-letters?sort=keyExpiry&cursor=${byFailure}`, key);
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toEqual([{ field: "cursor", message: CURSOR_MESSAGE }]);
  });
});
