/**
 * A source's replay destination as typed on its card (the PATCH value or why it is refused) and the
 * signing secret's rotation grace in words. Pure; unit-tested in test/sources/replay-destination.system.test.ts.
 */
import { isAmqpUrl } from "@/lib/amqp/url";
import { brokerUrlProblem, isBrokerUrl } from "@/lib/inlets/service-url";

/**
 * The typed replay destination as the PATCH value: an http(s) URL without credentials (the server's rule,
 * lib/sources/schema.ts), or null for empty (no destination).
 */
export function parseReplayDestination(text: string): { ok: true; value: string | null } | { ok: false; error: string } {
  const t = text.trim();
  if (!t) return { ok: true, value: null };
  let url: URL;
  try {
    url = new URL(t);
  } catch {
    return { ok: false, error: "Type a full URL, e.g. https://billing.internal/webhooks/replay" };
  }
  if (isBrokerUrl(t)) {
    // RabbitMQ, BullMQ, NATS (docs/inlets.md): the password is stored encrypted and shown masked.
    const problem = brokerUrlProblem(t);
    return problem ? { ok: false, error: `The ${isAmqpUrl(t) ? "AMQP" : "broker"} URL ${problem}` } : { ok: true, value: t };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { ok: false, error: "The destination must be an http://, https://, amqp(s)://, bullmq(s):// or nats:// URL" };
  }
  if (url.username || url.password) return { ok: false, error: "No credentials in the URL: the signature authenticates each request" };
  if (t.length > 2048) return { ok: false, error: "The destination must be at most 2048 characters" };
  return { ok: true, value: t };
}

/**
 * The signing-secret rotation's grace period as the Sources screen says it: while it runs, the previous
 * secret still signs replays next to the new one (`active`), so the destination may switch at any time
 * before `until`; once it ended, only the new secret signs. Pure (`now` in epoch ms).
 */
export function signingGrace(graceUntil: string | null, now: number): { active: boolean; until: string } | null {
  if (!graceUntil) return null;
  return { active: Date.parse(graceUntil) > now, until: graceUntil };
}
