/**
 * Dead-letter intake keeps payloads as received (issue 13, points 1, 3 and 5), through the real route
 * handlers with raw request bodies: the stored bytes are the `payload` value's own JSON text (big
 * integers, `\/`, `200.0`, whitespace, key order, non-ASCII untouched) or the decoded `payloadBase64`
 * with its `contentType`; a payload nested over 64 levels is refused on its own with a 422; bodies that
 * are not UTF-8 are a 400; nothing answers 500.
 */
import { describe, expect, it } from "vitest";
import { POST as single } from "@/app/api/v1/dead-letters/route";
import { POST as batch } from "@/app/api/v1/dead-letters/batch/route";
import { GET as detail } from "@/app/api/v1/dead-letters/[id]/route";
import { POST as claim } from "@/app/api/v1/claims/route";
import { MAX_ENVELOPE_PAYLOAD_BYTES, MAX_PAYLOAD_DEPTH } from "@/lib/deadletters/schema";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { isErrorBody, makeApiKey, post } from "@/test/setup/http";
import { seededRandom } from "@/test/setup/receiver";

/** A letter's JSON text with `payloadJson` spliced in verbatim (no JSON.stringify of the payload). */
const letterText = (source: string, payloadJson: string, eventId = uniq("evt")) =>
  `{"source":"${source}","eventId":"${eventId}","eventType":"order.created","error":"consumer crashed","payload":${payloadJson}}`;

const stored = async (id: string) =>
  (await sql<{ payload: Buffer; content_type: string; payload_bytes: number }>("SELECT payload, content_type, payload_bytes FROM dead_letters WHERE id = $1", [id]))[0];

const deep = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

describe("JSON payloads are stored as the bytes sent", () => {
  it("keeps big integers, escapes, number spellings, whitespace, key order and non-ASCII exactly", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const payloads = [
      '{"id":820982911946154508,"product_id":788032119674292922}',
      '{\n  "url": "https:\\/\\/shop.example\\/orders\\/1",\n  "total": 200.0,\n  "tax": 1.50e2\n}',
      '{"b":1,"2":"two","a":3,"1":"one"}',
      '{"name":"Zoë Müller","city":"東京","note":"🎉 done","esc":"\\u00e9"}',
      '[123456789012345678, -999999999999999999, 0.10, 1E+2]',
      '"just a string"',
    ];
    for (const p of payloads) {
      const res = await post(single, null, { key, raw: letterText(source, p) });
      expect(res.status, p).toBe(201);
      const row = await stored(res.body.id);
      expect(row.payload.equals(Buffer.from(p, "utf8")), p).toBe(true);
      expect(row).toMatchObject({ content_type: "application/json", payload_bytes: Buffer.byteLength(p) });
    }
    // The batch route stores each item's own bytes the same way.
    const items = payloads.map((p) => letterText(source, p));
    const res = await post(batch, null, { key, raw: `{ "items" : [\n${items.join(",\n")}\n] }` });
    expect(res.status).toBe(200);
    for (const [i, r] of (res.body.results as { id: string }[]).entries()) {
      expect((await stored(r.id)).payload.toString("utf8")).toBe(payloads[i]);
    }
  });

  it("GET /api/v1/dead-letters/{id} answers the payload as stored: base64 always, text when UTF-8", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write", "read"]);
    const p = '{"id":820982911946154508, "x":"\\/"}';
    const res = await post(single, null, { key, raw: letterText(source, p) });
    const got = await fetchDetail(res.body.id, key);
    expect(got).toMatchObject({ contentType: "application/json", payloadText: p, payloadBytes: Buffer.byteLength(p) });
    expect(Buffer.from(got.payloadBase64, "base64").toString("utf8")).toBe(p);
  });

  it("a body that is not UTF-8 is a 400 (the bytes and the parsed value must agree); a BOM before it is ignored, the payload's bytes exact", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const latin1 = Buffer.from(letterText(source, '{"name":"Zoë"}'), "latin1");
    const r1 = await post(single, null, { key, raw: latin1 });
    expect(r1.status).toBe(400);
    expect(r1.body.error.message).toMatch(/UTF-8/);
    const p = '{"id":820982911946154508,  "é":"\\/"}';
    const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(letterText(source, p))]);
    const r2 = await post(single, null, { key, raw: bom });
    expect(r2.status).toBe(201);
    expect((await stored(r2.body.id)).payload.equals(Buffer.from(p))).toBe(true);
    const items = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`{"items":[${letterText(source, p)}]}`)]);
    const r3 = await post(batch, null, { key, raw: items });
    expect(r3.status).toBe(200);
    expect((await stored(r3.body.results[0].id)).payload.equals(Buffer.from(p))).toBe(true);
  });
});

describe("non-JSON payloads: payloadBase64 + contentType", () => {
  const form = "token=abc%2Fdef&team_id=T0001&text=caf%C3%A9+%E6%9D%B1&amount=820982911946154508";
  const xml = '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Sms to="+15551234567">Grüße</Sms></Response>';
  const latin1 = Buffer.from("name=Zo\xeb&city=K\xf6ln", "latin1");

  it("stores the decoded bytes and the media type as given", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const cases: [Buffer, string][] = [
      [Buffer.from(form), "application/x-www-form-urlencoded"],
      [Buffer.from(xml), "text/xml; charset=utf-8"],
      [latin1, "application/x-www-form-urlencoded; charset=ISO-8859-1"],
      [Buffer.alloc(0), "text/plain"],
    ];
    for (const [bytes, contentType] of cases) {
      const res = await post(
        single,
        { source, eventId: uniq("evt"), eventType: "sms.received", error: "timeout", payloadBase64: bytes.toString("base64"), contentType },
        { key },
      );
      expect(res.status, contentType).toBe(201);
      const row = await stored(res.body.id);
      expect(row.payload.equals(bytes)).toBe(true);
      expect(row).toMatchObject({ content_type: contentType, payload_bytes: bytes.length });
    }
  });

  it("exactly one of payload and payloadBase64; contentType required with base64 and a valid media type; canonical base64", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const base = { source, eventType: "t", error: "e" };
    const b64 = Buffer.from(form).toString("base64");
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ payload: {}, payloadBase64: b64, contentType: "text/plain" }, /payloadBase64: send payload or payloadBase64, not both/],
      [{ payloadBase64: b64 }, /contentType: is required with payloadBase64/],
      [{}, /payload: is required/],
      [{ payloadBase64: b64, contentType: "form" }, /contentType: must be a media type/],
      [{ payloadBase64: b64, contentType: "text/xml\r\nx-evil: 1" }, /contentType: must be a media type/],
      [{ payloadBase64: b64, contentType: "text/plain; charset" }, /contentType: must be a media type/],
      [{ payloadBase64: "not base64!", contentType: "text/plain" }, /payloadBase64: must be standard base64/],
      [{ payloadBase64: "YWJj", contentType: "text/plain", extra: 1 }, /extra/],
      [{ payloadBase64: "YQ", contentType: "text/plain" }, /payloadBase64: must be standard base64/], // unpadded
      [{ payloadBase64: "YR==", contentType: "text/plain" }, /payloadBase64: must be standard base64/], // non-canonical
      [{ payloadBase64: "_-8=", contentType: "text/plain" }, /payloadBase64: must be standard base64/], // base64url
    ];
    for (const [fields, message] of cases) {
      const res = await post(single, { ...base, eventId: uniq("evt"), ...fields }, { key });
      expect(res.status, JSON.stringify(fields).slice(0, 80)).toBe(422);
      expect(isErrorBody(res.body)).toBe(true);
      expect(res.body.error.message).toMatch(message);
    }
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM dead_letters WHERE source = $1", [source]);
    expect(n).toBe(0);
  });

  it("the 1 MiB limit applies to the decoded bytes: single 413, batch that item's own error", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const item = (size: number) => ({
      source,
      eventId: uniq("evt"),
      eventType: "t",
      error: "e",
      payloadBase64: Buffer.alloc(size, 0x61).toString("base64"),
      contentType: "text/plain",
    });
    // Exactly the limit fits (its base64 is 4/3 larger, still under the single body cap).
    expect((await post(single, item(MAX_ENVELOPE_PAYLOAD_BYTES), { key })).status).toBe(201);
    const over = await post(single, item(MAX_ENVELOPE_PAYLOAD_BYTES + 1), { key });
    expect(over.status).toBe(413);
    expect(over.body.error).toMatchObject({ code: "payload_too_large" });
    expect(over.body.error.message).toMatch(/payloadBase64: must be at most 1048576 bytes in the JSON envelope \(it is 1048577\)/);
    const res = await post(batch, { items: [item(10), item(MAX_ENVELOPE_PAYLOAD_BYTES + 1), item(10)] }, { key });
    expect(res.status).toBe(200);
    expect(res.body.results[0].id).toBeDefined();
    expect(res.body.results[1].error).toMatchObject({ code: "payload_too_large", field: "payloadBase64" });
    expect(res.body.results[2].id).toBeDefined();
  });
});

describe("deep nesting", () => {
  it(`a payload nested over ${MAX_PAYLOAD_DEPTH} levels is a 422 payload_too_deep; ${MAX_PAYLOAD_DEPTH} levels is accepted`, async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    expect((await post(single, null, { key, raw: letterText(source, deep(MAX_PAYLOAD_DEPTH)) })).status).toBe(201);
    for (const n of [MAX_PAYLOAD_DEPTH + 1, 5000, 50_000]) {
      const res = await post(single, null, { key, raw: letterText(source, deep(n)) });
      expect(res.status, `${n}`).toBe(422);
      expect(res.body.error.code).toBe("payload_too_deep");
      expect(res.body.error.message).toBe(`payload: must nest at most ${MAX_PAYLOAD_DEPTH} arrays/objects deep (it nests ${n})`);
      expect(res.body.error.details.fields).toEqual([{ field: "payload", message: expect.stringContaining("at most 64") }]);
    }
  });

  it("in a batch, a 5,000-level payload fails only its own item; a 1,000,000-level one (arrays) too", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const million = `${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`;
    const items = [letterText(source, '{"ok":1}'), letterText(source, deep(5000)), letterText(source, million), letterText(source, "[2]")];
    const res = await post(batch, null, { key, raw: `{"items":[${items.join(",")}]}` });
    expect(res.status).toBe(200);
    const r = res.body.results;
    expect(r[0].id).toBeDefined();
    expect(r[1].error).toMatchObject({ code: "payload_too_deep", field: "payload" });
    expect(r[1].error.message).toMatch(/it nests 5000/);
    expect(r[2].error).toMatchObject({ code: "payload_too_deep", field: "payload" });
    expect(r[3].id).toBeDefined();
    expect((await stored(r[3].id)).payload.toString()).toBe("[2]");
  });

  it("the route wrapper's JSON reader survives a 5,000-level body on another route (a 4xx, never a 500)", async () => {
    const { key } = await makeApiKey(["claims:write"]);
    for (const raw of [`{"source":"s","eventId":"e","eventType":"t","x":${deep(5000)}}`, `{"source":${deep(5000)}}`, "[".repeat(5000) + "]".repeat(5000)]) {
      const res = await post(claim, null, { key, raw });
      expect(res.status).toBe(422);
      expect(isErrorBody(res.body)).toBe(true);
    }
  });
});

async function fetchDetail(id: string, key: string) {
  const res = await detail(new Request(`http://localhost/api/v1/dead-letters/${id}`, { headers: { authorization: `Bearer ${key}` } }), {
    params: Promise.resolve({ id }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { contentType: string; payloadText: string | null; payloadBase64: string; payloadBytes: number };
}

describe("hostile bodies", () => {
  it("seeded mutations of valid single and batch bodies never answer 500, and what is stored is the payload JSON.parse saw", async () => {
    const source = await makeSource();
    const { key } = await makeApiKey(["deadletters:write"]);
    const rnd = seededRandom(2026);
    const pieces = ['"', "\\", "{", "}", "[", "]", ",", ":", " ", "payload", "items", "\\u0070", "é", "1e999", "-", "0", "null", '"payload":', '"items":['];
    const base = [
      letterText(source, '{"id":820982911946154508,"a":[1,2,{"b":"\\/"}]}'),
      `{"items":[${letterText(source, '{"x":1}')},${letterText(source, "[200.0]")}]}`,
    ];
    let storedCount = 0;
    for (let i = 0; i < 300; i++) {
      const which = i % 2;
      let text = base[which];
      for (let m = 0; m < 1 + Math.floor(rnd() * 3); m++) {
        const at = Math.floor(rnd() * text.length);
        const cut = Math.floor(rnd() * 4);
        text = text.slice(0, at) + (rnd() < 0.7 ? pieces[Math.floor(rnd() * pieces.length)] : "") + text.slice(at + cut);
      }
      const res = await post(which === 0 ? single : batch, null, { key, raw: text });
      expect([200, 201, 400, 413, 422], text).toContain(res.status);
      expect(isErrorBody(res.body) || res.status < 300, text).toBe(true);
      // Whatever was stored is the payload JSON.parse saw in that body, as its own text.
      const parsed = res.status < 300 ? (JSON.parse(text) as { payload?: unknown; items?: { payload?: unknown }[] }) : null;
      const ids: [string, unknown][] =
        res.status === 201
          ? [[res.body.id, parsed!.payload]]
          : res.status === 200
            ? (res.body.results as { id?: string }[]).flatMap((r, j) => (r.id ? [[r.id, parsed!.items![j].payload] as [string, unknown]] : []))
            : [];
      for (const [id, payload] of ids) expect(JSON.parse((await stored(id)).payload.toString("utf8")), text).toEqual(payload);
      storedCount += ids.length;
    }
    expect(storedCount).toBeGreaterThan(20); // the mutations left enough bodies valid for the check above to bite
  });
});
