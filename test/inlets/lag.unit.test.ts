/** components/overview/inlet-lag.ts: an inlet's reported lag as the Overview words it. Pure. */
import { describe, expect, it } from "vitest";
import { inletLagRow } from "@/components/overview/inlet-lag";
import type { InletLag } from "@/lib/overview/schema";

const NOW = Date.parse("2026-12-05T10:00:00Z");
const at = (secondsAgo: number) => new Date(NOW - secondsAgo * 1000).toISOString();
const base: InletLag = {
  id: "i1", source: "billing", kind: "amqp", queue: "orders.dlq", state: "consuming", lastError: null,
  lagMessages: 1234, lagCheckedAt: at(3), lastMessageAt: at(90), lastMessageAgeSeconds: 2.46,
};

describe("inletLagRow", () => {
  it("a consuming inlet: its depth and the last message's lag", () => {
    expect(inletLagRow(base, NOW)).toEqual({
      id: "i1", source: "billing", kind: "RabbitMQ", queue: "orders.dlq",
      state: { text: "Consuming", tone: "ok" },
      waiting: "1,234",
      lastMessage: "2.5 s after it was dead-lettered, 1m30s ago",
    });
  });

  it("says when the report is old, when it failed, and when nothing was consumed yet", () => {
    expect(inletLagRow({ ...base, lagCheckedAt: at(300) }, NOW).state).toEqual({ text: "No report for 5m: no consumer running?", tone: "warn" });
    expect(inletLagRow({ ...base, state: "error", lastError: 'queue "q" not found' }, NOW).state).toEqual({ text: 'Error: queue "q" not found', tone: "error" });
    const fresh = inletLagRow({ ...base, state: "starting", lagMessages: null, lagCheckedAt: null, lastMessageAt: null, lastMessageAgeSeconds: null }, NOW);
    expect(fresh).toMatchObject({ waiting: "—", lastMessage: "None yet", state: { tone: "off" } });
  });
});
