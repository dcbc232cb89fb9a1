/** Dead-letter intake through the real route handlers: single and batch, audit rows, and clear 4xx. */
import { describe, expect, it } from "vitest";
import { POST as single } from "@/app/api/v1/dead-letters/route";
import { POST as batch } from "@/app/api/v1/dead-letters/batch/route";
import { MAX_ENVELOPE_PAYLOAD_BYTES } from "@/lib/deadletters/schema";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { isErrorBody, makeApiKey, post } from "@/test/setup/http";
import type { Json } from "@/test/setup/json";

const letter = (source: string, o: Record<string, unknown> = {}) => ({
  source,
  eventId: uniq("evt"),
  eventType: "invoice.paid",
  payload: { amount: 42, nested: { ok: true } },
  error: "handler timed out",
  ...o,
});

describe("POST /api/v1/dead-letters", () => {
  it("stores a letter with its dead_lettered audit row; failedAt defaults to now, kept to the millisecond", async () => {
    const source = await makeSource();
    const { key, name } = await makeApiKey(["deadletters:write"]);
    const body = letter(source, { attempts: 3, queue: "billing", failedAt: "2026-12-01T10:00:00.123456Z" });
    const res = await post(single, body, { key });
    expect(res.status).toBe(201);
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const [row] = await sql<Json>("SELECT * FROM dead_letters WHERE id = $1", [res.body.id]);
    expect(row).toMatchObject({ source, event_id: body.eventId, status: "pending", attempts: 3, queue: "billing", error: "handler timed out" });
    // Stored as the bytes of the payload's JSON text in the request (post() sends JSON.stringify(body)).
    expect(row.payload.toString("utf8")).toBe(JSON.stringify(body.payload));
    expect(row).toMatchObject({ content_type: "application/json", payload_bytes: row.payload.length });
    expect(row.failed_at.toISOString()).toBe("2026-12-01T10:00:00.123Z");
    const audit = await sql<Json>("SELECT kind, actor, event_type, detail FROM audit_events WHERE source = $1 AND event_id = $2", [
      source,
      body.eventId,
    ]);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ kind: "dead_lettered", actor: `apikey:${name}`, event_type: "invoice.paid" });
    expect(audit[0].detail).toMatchObject({ deadLetterId: res.body.id, attempts: 3, queue: "billing" });

    const dflt = await post(single, letter(source), { key });
    const [r2] = await sql<{ ok: boolean }>(
      "SELECT failed_at > now() - interval '1 minute' AND failed_at = date_trunc('milliseconds', failed_at) AS ok FROM dead_letters WHERE id = $1",
      [dflt.body.id],
    );
    expect(r2.ok).toBe(true);
  });

  it("refuses bad input with a 4xx naming the problem, and stores nothing", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const cases: [unknown, number, RegExp][] = [
      [letter(source, { eventId: "" }), 422, /eventId/],
      [letter(source, { eventType: "a\u0001b" }), 422, /eventType: must not contain control characters/],
      [letter(source, { error: "x".repeat(4097) }), 422, /error: must be at most 4096/],
      [letter(source, { attempts: -1 }), 422, /attempts/],
      [letter(source, { failedAt: "yesterday" }), 422, /failedAt: must be an ISO-8601 time/],
      [letter(source, { payload: undefined }), 422, /payload: is required/],
      [letter(source, { extra: 1 }), 422, /extra/],
      [letter("no-such-source-xyz"), 422, /unknown source "no-such-source-xyz"/],
    ];
    for (const [body, status, message] of cases) {
      const res = await post(single, body, { key });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(isErrorBody(res.body)).toBe(true);
      expect(res.body.error.message).toMatch(message);
    }
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dead_letters WHERE source = $1", [source]);
    expect(n).toBe(0);
    // Bytes are stored as bytes: a NUL escape or a lone surrogate escape in a JSON string is kept as sent.
    for (const text of ['{"s":"a\\u0000b"}', '{"s":"\\ud800"}', '{"s":"\\\\u0000"}']) {
      const raw = `{"source":"${source}","eventId":"${uniq("evt")}","eventType":"t","error":"e","payload":${text}}`;
      const res = await post(single, null, { key, raw });
      expect(res.status, text).toBe(201);
      const [row] = await sql<{ payload: Buffer }>("SELECT payload FROM dead_letters WHERE id = $1", [res.body.id]);
      expect(row.payload.toString("utf8")).toBe(text);
    }
  });

  it("413 for a payload over 1 MiB, by declared length and by the bytes read, 400 for malformed JSON, 415 for non-JSON", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const big = letter(source, { payload: { blob: "x".repeat(MAX_ENVELOPE_PAYLOAD_BYTES) } });
    const res = await post(single, big, { key });
    expect(res.status).toBe(413);
    // Just under the body cap but over the payload cap once serialized.
    const edge = letter(source, { payload: { blob: "x".repeat(MAX_ENVELOPE_PAYLOAD_BYTES - 8) } });
    expect((await post(single, edge, { key })).status).toBe(413);
    const fits = letter(source, { payload: "x".repeat(MAX_ENVELOPE_PAYLOAD_BYTES - 2) });
    expect((await post(single, fits, { key })).status).toBe(201);
    // A streamed body without Content-Length is cut off at the cap.
    const chunks = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(`{"source":"${source}","payload":"`));
        for (let i = 0; i < 200; i++) c.enqueue(new TextEncoder().encode("y".repeat(10_000)));
        c.enqueue(new TextEncoder().encode('"}'));
        c.close();
      },
    });
    expect((await post(single, null, { key, raw: chunks })).status).toBe(413);
    expect((await post(single, null, { key, raw: "{not json" })).status).toBe(400);
    expect((await post(single, letter(source), { key, contentType: "text/plain" })).status).toBe(415);
  });

  it("401 without a key, 403 for a key without deadletters:write", async () => {
    const source = await makeSource();
    expect((await post(single, letter(source))).status).toBe(401);
    const { key } = await makeApiKey(["claims:write"]);
    expect((await post(single, letter(source), { key })).status).toBe(403);
  });
});

describe("POST /api/v1/dead-letters/batch", () => {
  it("stores the good items, answers per item in input order, one audit row per stored letter", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const items = [
      letter(source),
      letter(source, { eventType: "" }),
      letter("no-such-source-xyz"),
      letter(source, { payload: { blob: "x".repeat(MAX_ENVELOPE_PAYLOAD_BYTES) } }),
      letter(source),
    ];
    const res = await post(batch, { items }, { key });
    expect(res.status).toBe(200);
    const r = res.body.results;
    expect(r).toHaveLength(5);
    expect(r[0].id).toBeDefined();
    expect(r[1].error).toMatchObject({ code: "invalid_request", field: "eventType" });
    expect(r[2].error).toMatchObject({ code: "unknown_source", field: "source" });
    expect(r[3].error).toMatchObject({ code: "payload_too_large", field: "payload" });
    expect(r[4].id).toBeDefined();
    const stored = await sql<{ id: string; event_id: string }>("SELECT id, event_id FROM dead_letters WHERE source = $1", [source]);
    expect(new Map(stored.map((s) => [s.id, s.event_id]))).toEqual(
      new Map([
        [r[0].id, items[0].eventId],
        [r[4].id, items[4].eventId],
      ]),
    );
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM audit_events WHERE source = $1 AND kind = 'dead_lettered'", [source]);
    expect(n).toBe(2);
  });

  it("a body that is not { items: [...] } (or holds 0 or 501 items) is a 422", async () => {
    const { key } = await makeApiKey(["deadletters:write"]);
    for (const body of [[], { items: [] }, { items: "x" }, { letters: [] }, { items: Array.from({ length: 501 }, () => ({})) }]) {
      const res = await post(batch, body, { key });
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(422);
      expect(isErrorBody(res.body)).toBe(true);
    }
  });

  it("500 items in one call", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const res = await post(batch, { items: Array.from({ length: 500 }, () => letter(source)) }, { key });
    expect(res.status).toBe(200);
    expect(res.body.results.every((x: { id?: string }) => x.id)).toBe(true);
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dead_letters WHERE source = $1", [source]);
    expect(n).toBe(500);
  });
});
