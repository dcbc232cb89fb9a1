/**
 * Bad input over HTTP on the claim routes: malformed JSON 400, schema violations 422 naming the fields,
 * unknown source 422 with the command that creates it, body > 1 MiB 413, wrong content type 415.
 * Every error has the one body shape { error: { code, message, details? } }.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { POST as claimRoute } from "@/app/api/v1/claims/route";
import { POST as batchRoute } from "@/app/api/v1/claims/batch/route";
import { POST as completeRoute } from "@/app/api/v1/claims/complete/route";
import { POST as releaseRoute } from "@/app/api/v1/claims/release/route";
import { makeSource, sql, uniq } from "@/test/setup/db";
import { isErrorBody, makeApiKey, post, type Called } from "@/test/setup/http";

let key: string;
let source: string;
beforeAll(async () => {
  ({ key } = await makeApiKey(["claims:write"]));
  source = await makeSource();
});

const valid = () => ({ source, eventId: uniq("evt"), eventType: "charge" });
const fieldsOf = (res: Called) => (res.body.error.details.fields as { field: string; message: string }[]).map((f) => f.field);

function expectError(res: Called, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(isErrorBody(res.body)).toBe(true);
  expect(res.body.error.code).toBe(code);
}

describe("malformed requests", () => {
  it.each([
    ["truncated JSON", '{"source": "x", '],
    ["not JSON at all", "source=x&eventId=y"],
    ["an empty body", ""],
  ])("%s → 400 malformed_json", async (_, raw) => {
    const res = await post(claimRoute, undefined, { key, raw });
    expectError(res, 400, "malformed_json");
  });

  it("valid JSON that is not an object → 422", async () => {
    for (const raw of ["[]", "null", '"text"', "42"]) {
      const res = await post(claimRoute, undefined, { key, raw });
      expectError(res, 422, "invalid_request");
    }
  });

  it.each([
    ["text/plain", "text/plain"],
    ["form data", "application/x-www-form-urlencoded"],
    ["no content type", null],
  ])("content type %s → 415", async (_, contentType) => {
    const res = await post(claimRoute, valid(), { key, contentType });
    expectError(res, 415, "unsupported_media_type");
    expect(res.body.error.message).toMatch(/application\/json/);
  });

  it("application/json with a charset and +json types are accepted", async () => {
    expect((await post(claimRoute, valid(), { key, contentType: "application/json; charset=utf-8" })).status).toBe(201);
    expect((await post(claimRoute, valid(), { key, contentType: "application/vnd.keyward+json" })).status).toBe(201);
  });
});

describe("body size", () => {
  const MiB = 1024 * 1024;

  it("a body over 1 MiB → 413 (no Content-Length: the stream is counted)", async () => {
    const big = JSON.stringify({ ...valid(), pad: "x".repeat(MiB) });
    expect(Buffer.byteLength(big)).toBeGreaterThan(MiB);
    const res = await post(claimRoute, undefined, { key, raw: big });
    expectError(res, 413, "body_too_large");
  });

  it("a declared Content-Length over 1 MiB → 413 before reading", async () => {
    const res = await post(claimRoute, undefined, { key, raw: "{}", headers: { "content-length": String(MiB + 1) } });
    expectError(res, 413, "body_too_large");
  });

  it("a chunked body that grows past 1 MiB → 413", async () => {
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > 2 * MiB) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const res = await post(claimRoute, undefined, { key, raw: stream });
    expectError(res, 413, "body_too_large");
    expect(sent).toBeLessThan(2 * MiB); // it stopped reading early
  });

  it("a body of exactly 1 MiB is read (and judged on its content: 422 for the padding field)", async () => {
    const skeleton = JSON.stringify({ ...valid(), pad: "" });
    const exact = JSON.stringify({ ...valid(), pad: "x".repeat(MiB - Buffer.byteLength(skeleton)) });
    expect(Buffer.byteLength(exact)).toBe(MiB);
    const res = await post(claimRoute, undefined, { key, raw: exact });
    expectError(res, 422, "invalid_request");
    expect(res.body.error.message).toMatch(/pad/);
  });

  it("the batch route has the same limit", async () => {
    const big = JSON.stringify({ source, events: [{ eventId: "a", eventType: "t" }], pad: "y".repeat(MiB) });
    expectError(await post(batchRoute, undefined, { key, raw: big }), 413, "body_too_large");
  });
});

describe("schema violations → 422 naming the fields", () => {
  it.each([
    ["source with capitals", { source: "Stripe" }, "source", /\^\[a-z0-9\]/],
    ["source too long", { source: "a".repeat(65) }, "source", /a-z0-9/],
    ["empty eventId", { eventId: "" }, "eventId", /empty/],
    ["eventId over 255", { eventId: "e".repeat(256) }, "eventId", /255/],
    ["eventId with a control character", { eventId: "evt\u0000x" }, "eventId", /control/],
    ["eventId with a newline", { eventId: "evt\nx" }, "eventId", /control/],
    ["eventType over 128", { eventType: "t".repeat(129) }, "eventType", /128/],
    ["payloadHash not 64 hex", { payloadHash: "abc" }, "payloadHash", /64/],
    ["payloadHash with non-hex", { payloadHash: "z".repeat(64) }, "payloadHash", /hex/],
    ["leaseSeconds 0", { leaseSeconds: 0 }, "leaseSeconds", /1/],
    ["leaseSeconds 86401", { leaseSeconds: 86401 }, "leaseSeconds", /86400/],
    ["leaseSeconds fractional", { leaseSeconds: 2.5 }, "leaseSeconds", /whole/],
  ])("%s", async (_, override, field, message) => {
    const res = await post(claimRoute, { ...valid(), ...override }, { key });
    expectError(res, 422, "invalid_request");
    expect(fieldsOf(res)).toEqual([field]);
    const detail = res.body.error.details.fields[0].message as string;
    expect(detail).toMatch(message);
    expect(res.body.error.message).toContain(field);
  });

  it("an unknown extra field is named", async () => {
    const res = await post(claimRoute, { ...valid(), retries: 3 }, { key });
    expectError(res, 422, "invalid_request");
    expect(res.body.error.message).toMatch(/retries/);
  });

  it("several violations are all named at once", async () => {
    const res = await post(claimRoute, { source: "BAD", eventId: "", eventType: "t".repeat(200), leaseSeconds: 0 }, { key });
    expectError(res, 422, "invalid_request");
    expect(fieldsOf(res).sort()).toEqual(["eventId", "eventType", "leaseSeconds", "source"]);
  });

  it("missing required fields are named", async () => {
    const res = await post(claimRoute, { source }, { key });
    expect(fieldsOf(res).sort()).toEqual(["eventId", "eventType"]);
  });

  it("invalid input writes nothing", async () => {
    const eventId = uniq("never");
    await post(claimRoute, { source, eventId, eventType: "t", leaseSeconds: 0 }, { key });
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1 AND event_id = $2", [source, eventId]);
    expect(n).toBe(0);
  });

  it("complete and release validate the same way", async () => {
    const c = await post(completeRoute, { source, eventId: "", claimToken: "x" }, { key });
    expectError(c, 422, "invalid_request");
    expect(fieldsOf(c).sort()).toEqual(["claimToken", "eventId"]);
    const r = await post(releaseRoute, { source, eventId: "e", force: true }, { key });
    expectError(r, 422, "invalid_request");
    expect(r.body.error.message).toMatch(/force/);
  });
});

describe("unknown source", () => {
  it("→ 422 unknown_source whose message says how to create it", async () => {
    const name = uniq("missing");
    const res = await post(claimRoute, { source: name, eventId: "e1", eventType: "t" }, { key });
    expectError(res, 422, "unknown_source");
    expect(res.body.error.message).toContain(`keyward source create ${name}`);
    expect(res.body.error.message).toMatch(/--retry-window/);
    expect(res.body.error.details).toEqual({ field: "source" });
    const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [name]);
    expect(n).toBe(0);
  });
});
