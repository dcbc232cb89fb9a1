/**
 * The URLs of the brokers Keyward reads from and replays to, as stored and shown (pure; shared by the
 * inlets, the replay targets and the console's validation): AMQP (lib/amqp/url.ts), Redis for BullMQ, NATS.
 * They carry credentials, so they are stored encrypted and shown with the password masked.
 */
import { amqpUrlProblem, isAmqpUrl, maskAmqpUrl, PASSWORD_MASK } from "@/lib/amqp/url";
import { unstorableReason } from "@/lib/http/fields";

/** Why `text` is not a usable URL with one of `schemes` (e.g. ["redis", "rediss"]), or null. Pure. */
export function serviceUrlProblem(text: string, schemes: readonly string[], example: string): string | null {
  if (text.length > 2048) return "must be at most 2048 characters";
  const unstorable = unstorableReason(text);
  if (unstorable) return unstorable;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `must be a URL such as ${example}`;
  }
  if (!schemes.includes(url.protocol.slice(0, -1))) return `must be a ${schemes.map((s) => `${s}://`).join(" or ")} URL`;
  if (!url.hostname) return "must name a host";
  if (url.hash) return "must not have a #fragment";
  if (url.password === PASSWORD_MASK || url.username === PASSWORD_MASK) return `carries the masked password ${PASSWORD_MASK}: type the real one (it is never shown again)`;
  return null;
}

/**
 * An AMQP, Redis, BullMQ or NATS URL as lists and screens show it: the password replaced by `***` (and a
 * NATS token, which is the URL's user part when there is no password). Pure.
 */
export function maskServiceUrl(text: string): string {
  if (isAmqpUrl(text)) return maskAmqpUrl(text);
  const url = new URL(text);
  if (url.password) url.password = PASSWORD_MASK;
  else if (url.username && /^(nats|tls):$/.test(url.protocol)) url.username = PASSWORD_MASK;
  return url.toString();
}

/** A replay destination that is a broker (published to) rather than an HTTP endpoint (POSTed to). */
export function isBrokerUrl(text: string): boolean {
  return /^(amqps?|bullmqs?|nats):\/\//i.test(text);
}

/**
 * Why a broker replay destination is not usable, or null: amqp(s):// (lib/amqp/url.ts), bullmq(s)://host
 * [:port][/db]?queue=… (the queue may be left out: then a letter's own BullMQ queue), nats://host[:port]
 * [?subject=…] (without a subject: a letter's own subject). Pure.
 */
export function brokerUrlProblem(text: string): string | null {
  if (isAmqpUrl(text)) return amqpUrlProblem(text);
  if (/^bullmqs?:/i.test(text)) return serviceUrlProblem(text, ["bullmq", "bullmqs"], "bullmq://:password@redis.internal:6379/0?queue=orders");
  return serviceUrlProblem(text, ["nats"], "nats://user:password@nats.internal:4222?subject=orders.created");
}
