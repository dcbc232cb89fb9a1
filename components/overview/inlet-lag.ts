/**
 * The Overview's inlet rows (RabbitMQ, BullMQ, NATS), prepared (pure, no React): the state in words, the queue depth, the
 * last message's lag, and whether the report itself is old (no consumer running, or it cannot reach the
 * database). Unit-tested in test/inlets/lag.unit.test.ts.
 */
import type { InletLag } from "@/lib/overview/schema";
import { formatCount } from "@/components/ui/format";
import { formatDuration } from "@/lib/sources/duration";

/** A report older than this means no consumer is running (or it cannot write): the figures may be stale. */
export const STALE_REPORT_MS = 60_000;

export type InletLagRow = {
  id: string;
  source: string;
  /** RabbitMQ · BullMQ · NATS */
  kind: string;
  queue: string;
  state: { text: string; tone: "ok" | "warn" | "error" | "off" };
  waiting: string;
  lastMessage: string;
};

function seconds(s: number): string {
  return s < 60 ? `${s < 10 ? s.toFixed(1) : Math.round(s)} s` : formatDuration(s);
}

export const KIND_LABEL: Record<InletLag["kind"], string> = { amqp: "RabbitMQ", bullmq: "BullMQ", nats: "NATS" };

export function inletLagRow(i: InletLag, now: number): InletLagRow {
  const checked = i.lagCheckedAt ? Date.parse(i.lagCheckedAt) : null;
  const stale = checked === null || now - checked > STALE_REPORT_MS;
  let state: InletLagRow["state"];
  if (i.state === "error") state = { text: `Error: ${i.lastError ?? "unknown"}`, tone: "error" };
  else if (i.state === "starting") state = { text: "Not consumed yet (is a server running with KEYWARD_INLET_CONSUMER=on?)", tone: "off" };
  else if (stale) state = { text: `No report for ${seconds(Math.round((now - (checked ?? now)) / 1000))}: no consumer running?`, tone: "warn" };
  else state = { text: "Consuming", tone: "ok" };
  return {
    id: i.id,
    source: i.source,
    kind: KIND_LABEL[i.kind],
    queue: i.queue,
    state,
    waiting: i.lagMessages === null ? "—" : formatCount(i.lagMessages),
    lastMessage:
      i.lastMessageAt === null || i.lastMessageAgeSeconds === null
        ? "None yet"
        : `${seconds(i.lastMessageAgeSeconds)} after it was dead-lettered, ${seconds(Math.max(0, Math.round((now - Date.parse(i.lastMessageAt)) / 1000)))} ago`,
  };
}
