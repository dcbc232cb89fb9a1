/** components/sources/prepare.ts parseReplayDestination: the Sources card's destination field → PATCH value. Pure. */
import { describe, expect, it } from "vitest";
import { parseReplayDestination } from "../../components/sources/prepare";

describe("parseReplayDestination", () => {
  it("accepts http and https URLs, trimmed, and empty as no destination", () => {
    expect(parseReplayDestination("  https://billing.internal/replay ")).toEqual({ ok: true, value: "https://billing.internal/replay" });
    expect(parseReplayDestination("http://127.0.0.1:8080/hook")).toEqual({ ok: true, value: "http://127.0.0.1:8080/hook" });
    expect(parseReplayDestination("   ")).toEqual({ ok: true, value: null });
  });

  it("refuses what the server refuses, with a sentence", () => {
    expect(parseReplayDestination("billing.internal/replay")).toEqual({ ok: false, error: expect.stringMatching(/full URL/) });
    expect(parseReplayDestination("ftp://x/y")).toEqual({ ok: false, error: expect.stringMatching(/http:\/\/ or https:\/\//) });
    expect(parseReplayDestination("https://user:pw@x/y")).toEqual({ ok: false, error: expect.stringMatching(/No credentials/) });
    expect(parseReplayDestination(`https://x/${"a".repeat(2050)}`)).toEqual({ ok: false, error: expect.stringMatching(/2048/) });
  });
});
