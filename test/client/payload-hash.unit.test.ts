/**
 * keyward/client's payload hashes (lib/client/payload-hash.ts): canonical JSON as RFC 8785 writes it (the
 * RFC's own example), equal hashes for re-serialised JSON and different ones for changed content, raw bytes
 * hashed as they are, and values JSON cannot hold refused.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { canonicalJson, payloadHashOf } from "@/lib/client";

const sha = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");

describe("canonicalJson (RFC 8785)", () => {
  it("writes the RFC's example exactly (§3.2.3: sorted members, ES number and string forms)", () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("sorts members by UTF-16 code units at every depth, drops undefined members, writes -0 as 0, uses toJSON", () => {
    expect(canonicalJson({ b: [{ z: 1, y: undefined, a: -0 }], a: new Date("2026-01-02T03:04:05.000Z"), "\u20ac": 1, "\ud83d\ude00": 2, "\ufb33": 3 })).toBe(
      '{"a":"2026-01-02T03:04:05.000Z","b":[{"a":0,"z":1}],"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3}', // by code point, U+FB33 would come before U+1F600
    );
    expect(() => canonicalJson({ x: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson(10n)).toThrow(TypeError);
    expect(() => canonicalJson(undefined)).toThrow(TypeError);
  });
});

describe("payloadHashOf", () => {
  it("hashes bytes and strings as they are, anything else as canonical JSON", async () => {
    const bytes = Buffer.from([0xff, 0x00, 0x41]);
    expect(await payloadHashOf(new Uint8Array(bytes))).toBe(sha(bytes));
    expect(await payloadHashOf("héllo")).toBe(sha(Buffer.from("héllo", "utf8")));
    const a = await payloadHashOf({ id: "evt_1", amount: 5, items: [1, 2] });
    expect(a).toBe(sha('{"amount":5,"id":"evt_1","items":[1,2]}'));
    expect(await payloadHashOf(JSON.parse('{ "items": [1, 2.0], "amount": 5, "id": "evt_1" }'))).toBe(a);
    expect(await payloadHashOf({ id: "evt_1", amount: 6, items: [1, 2] })).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
  });
});
