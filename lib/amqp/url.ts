/**
 * AMQP URLs as Keyward stores and shows them (pure; shared by the inlets, the replay target and the
 * console's validation).
 *
 * Form: `amqp[s]://user:password@host[:port][/vhost][?exchange=x&routingKey=y&heartbeat=…]`. The vhost is
 * the path, percent-encoded (`/%2F` is the vhost `/`; no path is `/` as well). `exchange` and
 * `routingKey` are Keyward's own parameters (the AMQP replay target's routing, see
 * docs/inlets.md#replaying-to-rabbitmq); every other parameter is passed to the client (amqplib reads
 * `heartbeat`, `frameMax`, `channelMax`, `locale`).
 *
 * The URL carries the credentials, so it is stored encrypted and shown only with the password masked.
 */
import { z } from "zod";
import { unstorableReason } from "@/lib/http/fields";

export const AMQP_PROTOCOL = /^amqps?:$/;
export const MAX_AMQP_URL_LENGTH = 2048;
/** What a masked password reads as. */
export const PASSWORD_MASK = "***";

/** Whether `text` is an amqp:// or amqps:// URL (not necessarily a valid one). */
export function isAmqpUrl(text: string): boolean {
  return /^amqps?:\/\//i.test(text);
}

/** Why `text` is not a usable AMQP URL, or null. Pure. */
export function amqpUrlProblem(text: string): string | null {
  if (text.length > MAX_AMQP_URL_LENGTH) return `must be at most ${MAX_AMQP_URL_LENGTH} characters`;
  const unstorable = unstorableReason(text);
  if (unstorable) return unstorable;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be a URL such as amqp://user:password@rabbit.internal:5672/vhost";
  }
  if (!AMQP_PROTOCOL.test(url.protocol)) return "must be an amqp:// or amqps:// URL";
  if (!url.hostname) return "must name a host";
  if (url.hash) return "must not have a #fragment";
  if (url.password === PASSWORD_MASK || decodeURIComponent(url.password) === PASSWORD_MASK) {
    return `carries the masked password ${PASSWORD_MASK}: type the real password (it is never shown again)`;
  }
  try {
    decodeURIComponent(url.pathname);
    decodeURIComponent(url.username);
    decodeURIComponent(url.password);
  } catch {
    return "has malformed percent-encoding";
  }
  if (url.pathname.slice(1).includes("/")) return "vhost must be one path segment (percent-encode a / in it as %2F)";
  return null;
}

/** A zod string that must be an AMQP URL (for request schemas). */
export const amqpUrl = z.string().superRefine((s, ctx) => {
  const problem = amqpUrlProblem(s);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

function vhostOf(url: URL): string {
  const path = url.pathname.replace(/^\//, "");
  return path === "" ? "/" : decodeURIComponent(path);
}

/** The URL with its password replaced by `***` (unchanged when it has none): what lists and screens show. Pure. */
export function maskAmqpUrl(text: string): string {
  const url = new URL(text);
  if (url.password) url.password = PASSWORD_MASK;
  return url.toString();
}

export type AmqpTarget = {
  /** The URL to connect with: Keyward's own parameters removed. */
  connectUrl: string;
  /** `?exchange=`: where to publish (may be "" for the default exchange); undefined: the letter's original exchange. */
  exchange: string | undefined;
  /** `?routingKey=`: the routing key to publish with; undefined: the letter's original routing key. */
  routingKey: string | undefined;
  vhost: string;
  host: string;
};

/** Splits a (valid) AMQP URL into what to connect to and Keyward's routing parameters. Pure. */
export function parseAmqpTarget(text: string): AmqpTarget {
  const url = new URL(text);
  const exchange = url.searchParams.get("exchange") ?? undefined;
  const routingKey = url.searchParams.get("routingKey") ?? undefined;
  url.searchParams.delete("exchange");
  url.searchParams.delete("routingKey");
  return { connectUrl: url.toString(), exchange, routingKey, vhost: vhostOf(url), host: url.host };
}
