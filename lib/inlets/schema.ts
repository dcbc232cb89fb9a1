/**
 * RabbitMQ inlet schemas and types, shared by the routes, the CLI, the console and the tests (no server
 * code here). An inlet pulls a source's dead letters from one queue (docs/inlets.md).
 */
import { z } from "zod";
import { amqpUrl } from "../amqp/url";
import { storableText } from "../http/fields";

export const DEFAULT_EVENT_ID_FROM = "property:message_id";
export const DEFAULT_PREFETCH = 50;
export const MAX_PREFETCH = 1000;

/**
 * Where a message's event id is read:
 * - `header:<name>`: an application header (a string, or a number written in decimal);
 * - `property:message_id` or `property:correlation_id`: the AMQP property;
 * - `json:<path>`: a field of the JSON body, a dot-separated path of keys and array indexes (`data.object.id`,
 *   `items.0.id`; a leading `$.` is allowed); a string, or an integer written as its exact JSON digits.
 */
export type EventIdFrom =
  | { kind: "header"; name: string }
  | { kind: "property"; name: "message_id" | "correlation_id" }
  | { kind: "json"; path: string[] };

/** Parses an --event-id-from value; a message naming the accepted forms when it is none. Pure. */
export function parseEventIdFrom(text: string): { ok: true; value: EventIdFrom } | { ok: false; error: string } {
  const m = /^(header|property|json):(.+)$/s.exec(text);
  const forms = "header:<name>, property:message_id, property:correlation_id or json:<path>";
  if (!m) return { ok: false, error: `must be one of ${forms}` };
  const [, kind, rest] = m;
  if (kind === "header") {
    if (rest.length > 255 || /[\u0000-\u001f\u007f]/.test(rest)) return { ok: false, error: "header name must be 1–255 printable characters" };
    return { ok: true, value: { kind: "header", name: rest } };
  }
  if (kind === "property") {
    if (rest !== "message_id" && rest !== "correlation_id") return { ok: false, error: "property must be message_id or correlation_id" };
    return { ok: true, value: { kind: "property", name: rest } };
  }
  const path = rest.replace(/^\$\./, "").split(".");
  if (rest.length > 255 || path.some((p) => p === "" || /[\u0000-\u001f\u007f]/.test(p))) {
    return { ok: false, error: "json path must be dot-separated keys or indexes, e.g. json:data.object.id" };
  }
  return { ok: true, value: { kind: "json", path } };
}

export const eventIdFrom = z.string().superRefine((s, ctx) => {
  const r = parseEventIdFrom(s);
  if (!r.ok) ctx.addIssue({ code: "custom", message: r.error });
});

export const queueName = storableText()
  .min(1, "must not be empty")
  .max(255, "must be at most 255 characters")
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "must not contain control characters");

/** POST /api/v1/sources/{name}/inlets, `keyward inlet add`. */
export const createInletRequest = z.strictObject({
  /** amqp[s]://user:password@host[:port]/vhost — stored encrypted, shown with the password masked. */
  amqpUrl,
  queue: queueName,
  eventIdFrom: eventIdFrom.default(DEFAULT_EVENT_ID_FROM),
  /** Messages held unacknowledged at once (the consumer's bound). */
  prefetch: z.number().int("must be a whole number").min(1).max(MAX_PREFETCH).default(DEFAULT_PREFETCH),
  /** Connect and check the queue exists before saving (default true). */
  check: z.boolean().default(true),
});
export type CreateInletRequest = z.input<typeof createInletRequest>;
/** A parsed inlet request: what lib/inlets/inlets.ts takes (the route and the CLI parse with the schema above). */
export type CreateInletFields = z.output<typeof createInletRequest>;
/** DELETE /api/v1/inlets/{id}: an id from this API (a malformed one is simply not found). */
export const inletParams = z.strictObject({ id: z.string().max(100, "must be an inlet id from this API") });

export const INLET_STATES = ["starting", "consuming", "error"] as const;
export type InletState = (typeof INLET_STATES)[number];

/** An inlet as the API, the CLI and the console show it: never the password. */
export type Inlet = {
  id: string;
  source: string;
  /** The AMQP URL with its password masked. */
  url: string;
  queue: string;
  eventIdFrom: string;
  prefetch: number;
  createdAt: string;
  createdBy: string;
  /** The consumer's last report: starting, consuming, or error (with lastError). */
  state: InletState;
  lastError: string | null;
  stateAt: string | null;
  lag: {
    /** Messages waiting in the queue when last checked (null: never checked). */
    messages: number | null;
    checkedAt: string | null;
    /** When the last message was stored, and how long after its dead-lettering. */
    lastMessageAt: string | null;
    lastMessageAgeSeconds: number | null;
  };
  /** Messages stored since the inlet was added (redeliveries of a stored one not counted). */
  consumed: number;
};
