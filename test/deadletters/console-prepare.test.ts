/** The console's pure helpers for dead letters: pretty-printing a payload without changing a number, the download's bytes, shared URL filters. */
import { describe, expect, it } from "vitest";
import { downloadName, payloadBytes, prettyPayload } from "../../components/deadletters/prepare";
import { filtersFromParams } from "../../components/replay/prepare";

describe("prettyPayload", () => {
  it("indents JSON token by token: big integers, escapes, 200.0 and key order stay as written", () => {
    const text = '{"b":1,"id":820982911946154508,"s":"a\\/b \\"q\\" é","n":200.0,"e":{},"l":[1,[]],"1":true}';
    const { text: out, json } = prettyPayload(text);
    expect(json).toBe(true);
    expect(out).toBe(
      ['{', '  "b": 1,', '  "id": 820982911946154508,', '  "s": "a\\/b \\"q\\" é",', '  "n": 200.0,', '  "e": {},', '  "l": [', "    1,", "    []", "  ],", '  "1": true', "}"].join("\n"),
    );
    // Only whitespace differs from the stored text.
    expect(out.replace(/\s+/g, "")).toBe(text.replace(/\s+/g, ""));
  });

  it("leaves text that is not JSON as it is", () => {
    expect(prettyPayload("a=1&b=2")).toEqual({ text: "a=1&b=2", json: false });
  });
});

describe("the download", () => {
  it("holds exactly the stored bytes, named after the event with an extension from the content type", () => {
    const bytes = Buffer.from([0, 255, 0x7b, 0xc3, 0xa9]);
    expect(Buffer.from(payloadBytes(bytes.toString("base64")))).toEqual(bytes);
    expect(downloadName("évt/1 2", "application/json; charset=utf-8")).toBe("_vt_1_2.json");
    expect(downloadName("evt_1", "application/octet-stream")).toBe("evt_1.bin");
  });
});

describe("filtersFromParams (shareable /replay URLs)", () => {
  it("reads the filters back, leaving out what the list would refuse", () => {
    expect(filtersFromParams({ source: "stripe", status: "pending", from: "2026-12-01T00:00:00.000Z", errorContains: "timeout" })).toEqual({
      source: "stripe",
      status: "pending",
      from: "2026-12-01T00:00:00.000Z",
      errorContains: "timeout",
    });
    expect(filtersFromParams({ status: "bogus", from: "yesterday", to: ["2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"], source: " " })).toEqual({
      to: "2026-12-02T00:00:00Z",
    });
  });
});
