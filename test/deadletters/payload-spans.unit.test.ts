/**
 * lib/deadletters/payload-spans.ts: the exact source bytes of `payload` values. Hand-picked traps, then a
 * seeded differential run: random JSON texts (odd whitespace, escapes, big and float-looking numbers,
 * non-ASCII, nesting) placed in single and batch bodies must come back byte for byte, and every span
 * must JSON.parse to what JSON.parse made of the whole body.
 */
import { describe, expect, it } from "vitest";
import { findPayloadSpans } from "@/lib/deadletters/payload-spans";
import { seededRandom } from "@/test/setup/receiver";

const bytes = (s: string) => Buffer.from(s, "utf8");
const text = (body: Buffer, span: { start: number; end: number } | undefined) => (span ? body.subarray(span.start, span.end).toString("utf8") : undefined);

describe("findPayloadSpans", () => {
  it("finds a single letter's payload, byte for byte, whatever is around it", () => {
    const cases = [
      '{"id":820982911946154508}',
      '{ "a" : [ 1 , 2.50 , -0.0e+3 ] ,\n\t"b":"\\/x\\u00e9\\"}"}',
      '"a string with } ] , : \\" \\\\ inside"',
      "200.0",
      "null",
      "[]",
      '{"2":1,"1":2,"b":3,"a":4}',
      '{"text":"Grüße, 東京, 🎉"}',
    ];
    for (const payload of cases) {
      const body = bytes(`{"source":"s","payload" :  ${payload}  ,"error":"e, } ] \\"payload\\":1"}`);
      expect(text(body, findPayloadSpans(body).payload)).toBe(payload);
    }
  });

  it("payload first, last, or alone; a key spelled with escapes counts; the last of repeated keys wins (as JSON.parse)", () => {
    const b1 = bytes('{"payload":[1,{"x":"]"}],"source":"s"}');
    expect(text(b1, findPayloadSpans(b1).payload)).toBe('[1,{"x":"]"}]');
    const b2 = bytes('{"pay\\u006coad":{"k":1}}');
    expect(text(b2, findPayloadSpans(b2).payload)).toBe('{"k":1}');
    const b3 = bytes('{"payload":1,"payload":{"second":true}}');
    expect(text(b3, findPayloadSpans(b3).payload)).toBe('{"second":true}');
    // A "payload" key nested inside another member is not the letter's payload.
    const b4 = bytes('{"meta":{"payload":1},"payload":2}');
    expect(text(b4, findPayloadSpans(b4).payload)).toBe("2");
    const b5 = bytes('{"meta":{"payload":1}}');
    expect(findPayloadSpans(b5).payload).toBeUndefined();
  });

  it("finds each batch item's payload by its index; items without one leave a hole; a repeated items array: the last wins", () => {
    const body = bytes('{"items":[{"payload":{"a":1}},{"source":"x"},{"x":[{"payload":9}],"payload":  [ 1 ]  },"str",{"payload":"p"}]}');
    const { items, payload } = findPayloadSpans(body);
    expect(payload).toBeUndefined();
    expect(items.map((s) => text(body, s))).toEqual(['{"a":1}', undefined, "[ 1 ]", undefined, '"p"']);
    const twice = bytes('{"items":[{"payload":1},{"payload":2}],"items":[{"payload":3}]}');
    expect(findPayloadSpans(twice).items.map((s) => text(twice, s))).toEqual(["3"]);
  });

  it("reports nesting depth (scalar 0, {} 1, [[1]] 2) and survives 1,000,000 levels without recursion", () => {
    const depthOf = (p: string) => findPayloadSpans(bytes(`{"payload":${p}}`)).payload!.depth;
    expect(depthOf("1")).toBe(0);
    expect(depthOf("{}")).toBe(1);
    expect(depthOf('{"a":[1,{"b":[]}]}')).toBe(4);
    expect(depthOf("[[1],[[2]]]")).toBe(3);
    const n = 1_000_000;
    const deep = bytes(`{"items":[{"payload":${"[".repeat(n)}${"]".repeat(n)}},{"payload":true}]}`);
    const spans = findPayloadSpans(deep).items;
    expect(spans[0]!.depth).toBe(n);
    expect(spans[0]!.end - spans[0]!.start).toBe(2 * n);
    expect(text(deep, spans[1])).toBe("true");
  });

  it("differential: random JSON texts come back exactly and parse to what JSON.parse makes of the whole body", () => {
    const rnd = seededRandom(13);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
    const ws = () => pick(["", "", " ", "\n", "\t", "  \r\n "]);
    const strings = ['""', '"plain"', '"\\/slash"', '"\\u00e9t\\u00E9"', '"é東🎉"', '"q\\"b\\\\"', '"}],:{["', '"\\ud83c\\udf89"', '"tab\\tnl\\n"'];
    const numbers = ["0", "-0", "200.0", "1e3", "-1.5E-7", "820982911946154508", "123456789012345678", "0.1000"];
    const gen = (depth: number): string => {
      const r = rnd();
      if (depth > 6 || r < 0.35) return pick([...strings, ...numbers, "true", "false", "null"]);
      if (r < 0.7) {
        const n = Math.floor(rnd() * 4);
        return `[${ws()}${Array.from({ length: n }, () => gen(depth + 1)).join(`${ws()},${ws()}`)}${ws()}]`;
      }
      const n = Math.floor(rnd() * 4);
      const keys = ['"a"', '"2"', '"1"', '"payload"', '"items"', '"k\\u00e9"', '"é"'];
      return `{${ws()}${Array.from({ length: n }, () => `${pick(keys)}${ws()}:${ws()}${gen(depth + 1)}`).join(`${ws()},${ws()}`)}${ws()}}`;
    };
    for (let i = 0; i < 400; i++) {
      const payloads = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => gen(0));
      const items = payloads.map((p) => `{${ws()}"source"${ws()}:${ws()}"s"${ws()},${ws()}"payload"${ws()}:${ws()}${p}${ws()},"n":${gen(3)}}`);
      const body = bytes(`${ws()}{"pre":${gen(2)},${ws()}"items"${ws()}:${ws()}[${ws()}${items.join(`${ws()},${ws()}`)}${ws()}]${ws()}}${ws()}`);
      const parsed = JSON.parse(body.toString("utf8")) as { items: { payload: unknown }[] };
      const spans = findPayloadSpans(body).items;
      expect(spans.map((s) => text(body, s))).toEqual(payloads);
      spans.forEach((s, j) => expect(JSON.parse(text(body, s)!)).toEqual(parsed.items[j].payload));
    }
  });
});
