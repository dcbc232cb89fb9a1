/**
 * Which of a forwarded request's headers a raw dead letter keeps (POST /api/v1/dead-letters/raw): the ones
 * that identify and authenticate the original delivery (delivery and event ids, event types, signatures
 * and their timestamps, from the common webhook senders), plus those the caller names in `keepHeaders`.
 * Never credentials meant for Keyward or a proxy (Authorization, Cookie, a shared token such as GitLab's
 * X-Gitlab-Token), and never Keyward's own fields. They are shown on the letter's page; a replay sends
 * Keyward's own signature headers, not these. Pure.
 */
import { storableRepresentation } from "@/lib/http/fields";
import type { SenderHeader } from "./schema";

/** Headers kept without being named: what tells which delivery this was and lets someone verify it. */
const KNOWN: readonly RegExp[] = [
  /^x-github-(delivery|event|hook-id|hook-installation-target-(id|type))$/,
  /^x-hub-signature(-256)?$/,
  /^stripe-signature$/,
  /^x-shopify-(topic|hmac-sha256|webhook-id|event-id|shop-domain|api-version|triggered-at)$/,
  /^(webhook|svix)-(id|timestamp|signature)$/,
  /^x-gitlab-(event|event-uuid|webhook-uuid|instance)$/,
  /^x-slack-(signature|request-timestamp)$/,
  /^x-twilio-(signature|idempotency-token)$/,
  /^paddle-signature$/,
  /^x-razorpay-(signature|event-id)$/,
  /^x-square-hmacsha256-signature$/,
  /^x-hubspot-(signature|signature-v3|request-timestamp)$/,
  /^linear-(delivery|event|signature)$/,
  /^x-amz-sns-(message-id|message-type|topic-arn)$/,
  /^x-(event-id|event-type|delivery-id|webhook-id|webhook-signature|webhook-timestamp|request-id)$/,
  /^(x-)?idempotency-key$/,
  /^user-agent$/,
];

/** Never kept, even when named: credentials and the intake's own parameters. */
const NEVER: readonly RegExp[] = [/^(proxy-)?authorization$/, /^(set-)?cookie$/, /^x-gitlab-token$/, /^keyward-/, /^x-keyward-/, /^x-api-key$/];

export const MAX_SENDER_HEADERS = 50;
export const MAX_SENDER_HEADER_CHARS = 4096;

/**
 * The headers of `headers` to keep, in the order received, each value as text PostgreSQL can store (a
 * header's bytes are read as UTF-8 when they are, else as Latin-1, as Node decoded them), at most
 * MAX_SENDER_HEADERS of at most MAX_SENDER_HEADER_CHARS characters each.
 */
export function pickSenderHeaders(headers: Iterable<[string, string]>, extra: readonly string[] = []): SenderHeader[] {
  const named = new Set(extra.map((n) => n.toLowerCase()));
  const kept: SenderHeader[] = [];
  for (const [rawName, rawValue] of headers) {
    const name = rawName.toLowerCase();
    if (NEVER.some((re) => re.test(name))) continue;
    if (!named.has(name) && !KNOWN.some((re) => re.test(name))) continue;
    const value = storableRepresentation(utf8OrLatin1(rawValue));
    kept.push({ name, value: value.length > MAX_SENDER_HEADER_CHARS ? `${value.slice(0, MAX_SENDER_HEADER_CHARS - 1)}…` : value });
    if (kept.length === MAX_SENDER_HEADERS) break;
  }
  return kept;
}

/** A header value as Node hands it (each byte a Latin-1 character), read as UTF-8 when its bytes are UTF-8. */
export function utf8OrLatin1(value: string): string {
  if (!/[\u0080-\u00ff]/.test(value)) return value;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Buffer.from(value, "latin1"));
  } catch {
    return value;
  }
}
