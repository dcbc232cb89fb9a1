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
    expect(parseReplayDestination("ftp://x/y")).toEqual({ ok: false, error: expect.stringMatching(/http:\/\/, https:\/\/, amqp:\/\/ or amqps:\/\//) });
    expect(parseReplayDestination("https://user:pw@x/y")).toEqual({ ok: false, error: expect.stringMatching(/No credentials/) });
    expect(parseReplayDestination(`https://x/${"a".repeat(2050)}`)).toEqual({ ok: false, error: expect.stringMatching(/2048/) });
  });

  it("accepts an AMQP URL with its credentials (stored encrypted), but not the masked one shown back", () => {
    expect(parseReplayDestination("amqp://keyward:pw@rabbit.internal/prod?exchange=orders")).toEqual({
      ok: true,
      value: "amqp://keyward:pw@rabbit.internal/prod?exchange=orders",
    });
    expect(parseReplayDestination("amqps://keyward:***@rabbit.internal/prod")).toEqual({ ok: false, error: expect.stringMatching(/masked password/) });
  });
});
