/** components/sources/replay-destination.ts parseReplayDestination: the Sources card's destination field → PATCH value. Pure. */
import { describe, expect, it } from "vitest";
import { parseReplayDestination } from "@/components/sources/replay-destination";

describe("parseReplayDestination", () => {
  it("accepts http and https URLs, trimmed, and empty as no destination", () => {
    expect(parseReplayDestination("  https://billing.internal/replay ")).toEqual({ ok: true, value: "https://billing.internal/replay" });
    expect(parseReplayDestination("http://127.0.0.1:8080/hook")).toEqual({ ok: true, value: "http://127.0.0.1:8080/hook" });
    expect(parseReplayDestination("   ")).toEqual({ ok: true, value: null });
  });

  it("refuses what the server refuses, with a sentence", () => {
    expect(parseReplayDestination("billing.internal/replay")).toEqual({ ok: false, error: expect.stringMatching(/full URL/) });
    expect(parseReplayDestination("ftp://x/y")).toEqual({ ok: false, error: expect.stringMatching(/http:\/\/, https:\/\/, amqp\(s\):\/\/, bullmq\(s\):\/\/ or nats:\/\//) });
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

  it("accepts a BullMQ or NATS URL (a job re-added, a JetStream publish), not the masked one", () => {
    expect(parseReplayDestination("bullmq://:pw@redis.internal:6379/0?queue=invoices")).toEqual({ ok: true, value: "bullmq://:pw@redis.internal:6379/0?queue=invoices" });
    expect(parseReplayDestination("nats://nats.internal:4222?subject=orders.retry")).toEqual({ ok: true, value: "nats://nats.internal:4222?subject=orders.retry" });
    expect(parseReplayDestination("bullmq://:***@redis.internal:6379")).toEqual({ ok: false, error: expect.stringMatching(/masked password/) });
  });
});
