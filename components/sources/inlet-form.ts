/**
 * The Sources screen's inlet form, pure (no React): its fields turned into the request body, or the first
 * field that is wrong and why (the server checks the same, and whether the queue can be consumed).
 */
import { amqpUrlProblem } from "@/lib/amqp/url";
import { DEFAULT_EVENT_ID_FROM, DEFAULT_PREFETCH, MAX_PREFETCH, parseEventIdFrom } from "@/lib/inlets/schema";

export type InletForm = { amqpUrl: string; queue: string; eventIdFrom: string; prefetch: string };
export const EMPTY_INLET_FORM: InletForm = { amqpUrl: "", queue: "", eventIdFrom: DEFAULT_EVENT_ID_FROM, prefetch: String(DEFAULT_PREFETCH) };

/** The request body, or the first field that is wrong and why. Pure. */
export function inletBody(f: InletForm): { ok: true; body: { amqpUrl: string; queue: string; eventIdFrom: string; prefetch: number } } | { ok: false; field: keyof InletForm; error: string } {
  const url = f.amqpUrl.trim();
  const urlProblem = url ? amqpUrlProblem(url) : "is required";
  if (urlProblem) return { ok: false, field: "amqpUrl", error: `AMQP URL ${urlProblem}` };
  if (!f.queue.trim()) return { ok: false, field: "queue", error: "Queue is required" };
  const from = parseEventIdFrom(f.eventIdFrom.trim());
  if (!from.ok) return { ok: false, field: "eventIdFrom", error: `Event id from ${from.error}` };
  const prefetch = Number(f.prefetch);
  if (!/^\d+$/.test(f.prefetch.trim()) || prefetch < 1 || prefetch > MAX_PREFETCH) {
    return { ok: false, field: "prefetch", error: `Prefetch must be a whole number from 1 to ${MAX_PREFETCH}` };
  }
  return { ok: true, body: { amqpUrl: url, queue: f.queue.trim(), eventIdFrom: f.eventIdFrom.trim(), prefetch } };
}
