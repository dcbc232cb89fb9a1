/** The console's pure helpers for dead letters: pretty-printing a payload without changing a number, the download's bytes, shared URL filters. */
import { describe, expect, it } from "vitest";
import { describeKey } from "@/components/deadletters/key-state";
import { downloadName, payloadBytes, prettyPayload } from "@/components/deadletters/payload";
import { filtersFromParams } from "@/components/replay/dead-letter-list";

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

describe("describeKey (the dead-letter page's key line)", () => {
  const now = Date.parse("2026-12-03T12:00:00Z");
  it("alive (amber within 24 h), expired and none, red when the event was processed", () => {
    expect(describeKey({ state: "alive", expiresAt: "2026-12-06T12:00:00Z", processed: false }, now)).toMatchObject({ label: "Alive", tone: "ok", detail: expect.stringMatching(/^expires in 3d/) });
    expect(describeKey({ state: "alive", expiresAt: "2026-12-03T14:00:00Z", processed: false }, now)).toMatchObject({ label: "Alive", tone: "warn" });
    expect(describeKey({ state: "expired", expiresAt: "2026-12-03T10:00:00Z", processed: true }, now)).toEqual({
      label: "Expired",
      tone: "error",
      detail: "2h ago; the event was processed: replaying it processes it twice",
    });
    expect(describeKey({ state: "none", expiresAt: null, processed: false }, now)).toMatchObject({ label: "No key", tone: "off", detail: "no processing recorded: replaying it is safe" });
  });
});
