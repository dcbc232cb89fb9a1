/**
 * Inlet schemas and types, shared by the routes, the CLI, the console and the tests (no server code here).
 * An inlet pulls a source's dead letters from where they fail (docs/inlets.md), of one of three kinds:
 * - `amqp`: a RabbitMQ queue (the one a dead-letter exchange routes to);
 * - `bullmq`: a BullMQ queue's jobs that reached `failed` after their last attempt;
 * - `nats`: a NATS JetStream consumer's messages that exhausted their deliveries (MAX_DELIVERIES advisories).
 */
import { z } from "zod";
import { pathId } from "@/lib/http/ids";
import { amqpUrl } from "@/lib/amqp/url";
import { instant, storableText } from "@/lib/http/fields";
import { serviceUrlProblem } from "./service-url";

export const INLET_KINDS = ["amqp", "bullmq", "nats"] as const;
export type InletKind = (typeof INLET_KINDS)[number];
/** Where the event id is read when the inlet does not say, by kind. */
export const DEFAULT_EVENT_ID_FROMS: Record<InletKind, string> = {
  amqp: "property:message_id",
  bullmq: "property:job_id",
  nats: "header:Nats-Msg-Id",
};
export const DEFAULT_EVENT_ID_FROM = DEFAULT_EVENT_ID_FROMS.amqp;
/** The properties an event id may be read from, by kind. */
const PROPERTIES: Record<InletKind, readonly string[]> = { amqp: ["message_id", "correlation_id"], bullmq: ["job_id"], nats: [] };
export const DEFAULT_PREFETCH = 50;
export const MAX_PREFETCH = 1000;

/**
 * Where a message's event id is read:
 * - `header:<name>`: a message header (AMQP application header, NATS header; a string, or a number written
 *   in decimal); not for BullMQ, whose jobs have no headers;
 * - `property:message_id` or `property:correlation_id` (AMQP), `property:job_id` (BullMQ: the job's id);
 * - `json:<path>`: a field of the JSON body (a BullMQ job's data), a dot-separated path of keys and array
 *   indexes (`data.object.id`, `items.0.id`; a leading `$.` is allowed); a string, or an integer written as
 *   its exact JSON digits.
 */
export type EventIdFrom =
  | { kind: "header"; name: string }
  | { kind: "property"; name: "message_id" | "correlation_id" | "job_id" }
  | { kind: "json"; path: string[] };

/** Parses an --event-id-from value for an inlet of `inletKind`; a message naming the accepted forms when it is none. Pure. */
export function parseEventIdFrom(text: string, inletKind: InletKind = "amqp"): { ok: true; value: EventIdFrom } | { ok: false; error: string } {
  const m = /^(header|property|json):(.+)$/s.exec(text);
  const properties = PROPERTIES[inletKind];
  const forms = [...(inletKind === "bullmq" ? [] : ["header:<name>"]), ...properties.map((p) => `property:${p}`), "json:<path>"];
  if (!m) return { ok: false, error: `must be one of ${forms.slice(0, -1).join(", ")} or ${forms[forms.length - 1]}` };
  const [, kind, rest] = m;
  if (kind === "header") {
    if (inletKind === "bullmq") return { ok: false, error: "a BullMQ job has no headers: use property:job_id or json:<path>" };
    // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
    if (rest.length > 255 || /[\u0000-\u001f\u007f]/.test(rest)) return { ok: false, error: "header name must be 1–255 printable characters" };
    return { ok: true, value: { kind: "header", name: rest } };
  }
  if (kind === "property") {
    if (!properties.includes(rest)) {
      return { ok: false, error: properties.length ? `property must be ${properties.join(" or ")}` : "a NATS message has no properties: use header:<name> or json:<path>" };
    }
    return { ok: true, value: { kind: "property", name: rest as "message_id" | "correlation_id" | "job_id" } };
  }
  const path = rest.replace(/^\$\./, "").split(".");
  // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
  if (rest.length > 255 || path.some((p) => p === "" || /[\u0000-\u001f\u007f]/.test(p))) {
    return { ok: false, error: "json path must be dot-separated keys or indexes, e.g. json:data.object.id" };
  }
  return { ok: true, value: { kind: "json", path } };
}

export const queueName = storableText()
  .min(1, "must not be empty")
  .max(255, "must be at most 255 characters")
  // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
  .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), "must not contain control characters");

const serviceUrl = (schemes: readonly string[], example: string) =>
  z.string().superRefine((s, ctx) => {
    const problem = serviceUrlProblem(s, schemes, example);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
/** redis[s]://[user:password@]host[:port][/db] — BullMQ's Redis. */
export const redisUrl = serviceUrl(["redis", "rediss"], "redis://:password@redis.internal:6379/0");
/** nats://[user:password@ | token@]host[:port], tls:// for TLS. */
export const natsUrl = serviceUrl(["nats", "tls"], "nats://user:password@nats.internal:4222");
/** A JetStream stream or consumer name: no spaces, dots, `*`, `>`, path separators (NATS's own rule). */
export const natsName = z
  .string()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  // eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
  .regex(/^[^\s.*>/\\\u0000-\u001f\u007f]+$/, "must be a JetStream name: no spaces, dots, *, >, / or \\");
/** A BullMQ key prefix (default "bull"). */
// eslint-disable-next-line no-control-regex -- control characters are what this rule refuses, on purpose
const bullPrefix = z.string().min(1).max(100).regex(/^[^\s\u0000-\u001f\u007f]+$/, "must not contain spaces or control characters");

/**
 * POST /api/v1/sources/{name}/inlets, `keyward inlet add`: one shape for the three kinds, `kind` saying
 * which (default `amqp`); each kind's own fields are required for it and refused for the others.
 */
export const createInletRequest = z
  .strictObject({
    kind: z.enum(INLET_KINDS).default("amqp"),
    /** amqp: amqp[s]://user:password@host[:port]/vhost. Every URL is stored encrypted, shown with the password masked. */
    amqpUrl: amqpUrl.optional(),
    /** bullmq: redis[s]://… */
    redisUrl: redisUrl.optional(),
    /** nats: nats://… */
    natsUrl: natsUrl.optional(),
    /** amqp: the queue consumed; bullmq: the BullMQ queue's name. */
    queue: queueName.optional(),
    /** bullmq: the key prefix the queue was created with (default "bull"). */
    prefix: bullPrefix.optional(),
    /** nats: the stream and the consumer whose exhausted messages are taken. */
    stream: natsName.optional(),
    consumer: natsName.optional(),
    /** nats: the stream Keyward keeps the MAX_DELIVERIES advisories in (default KEYWARD_DLQ_<stream>_<consumer>). */
    advisoryStream: natsName.optional(),
    /** Where the event id is read (default by kind: DEFAULT_EVENT_ID_FROMS). */
    eventIdFrom: z.string().optional(),
    /** Messages held unacknowledged at once (the consumer's bound). */
    prefetch: z.number().int("must be a whole number").min(1).max(MAX_PREFETCH).default(DEFAULT_PREFETCH),
    /** Connect and check the queue (stream, consumer) exists before saving (default true). */
    check: z.boolean().default(true),
  })
  .superRefine((d, ctx) => {
    const own: Record<InletKind, readonly (keyof typeof d)[]> = {
      amqp: ["amqpUrl", "queue"],
      bullmq: ["redisUrl", "queue", "prefix"],
      nats: ["natsUrl", "stream", "consumer", "advisoryStream"],
    };
    const required: Record<InletKind, readonly (keyof typeof d)[]> = {
      amqp: ["amqpUrl", "queue"],
      bullmq: ["redisUrl", "queue"],
      nats: ["natsUrl", "stream", "consumer"],
    };
    for (const field of required[d.kind]) if (d[field] === undefined) ctx.addIssue({ code: "custom", path: [field], message: `is required for a ${d.kind} inlet` });
    for (const field of ["amqpUrl", "redisUrl", "natsUrl", "queue", "prefix", "stream", "consumer", "advisoryStream"] as const) {
      if (d[field] !== undefined && !own[d.kind].includes(field)) ctx.addIssue({ code: "custom", path: [field], message: `is not a field of a ${d.kind} inlet` });
    }
    if (d.eventIdFrom !== undefined) {
      const r = parseEventIdFrom(d.eventIdFrom, d.kind);
      if (!r.ok) ctx.addIssue({ code: "custom", path: ["eventIdFrom"], message: r.error });
    }
  });
export type CreateInletRequest = z.input<typeof createInletRequest>;
/** A parsed inlet request: what lib/inlets/inlets.ts takes (the route and the CLI parse with the schema above). */
export type CreateInletFields = z.output<typeof createInletRequest>;
/** DELETE /api/v1/inlets/{id}: an id from this API (a malformed one is simply not found). */
/** /inlets/{id}: a malformed id is the same 404 as an unknown one (lib/http/ids.ts). */
export const inletParams = z.strictObject({ id: pathId("inlet_not_found", (id) => `no inlet ${id}`) });

export const INLET_STATES = ["starting", "consuming", "error"] as const;
export type InletState = (typeof INLET_STATES)[number];


/** A kind's own settings: bullmq `{ prefix }`; nats `{ stream, consumer, advisoryStream }`; amqp `{}`. */
export const inletSettingsSchema = z.object({
  prefix: z.string().optional(),
  stream: z.string().optional(),
  consumer: z.string().optional(),
  advisoryStream: z.string().optional(),
});
export type InletSettings = z.infer<typeof inletSettingsSchema>;

/** An inlet as the API, the CLI and the console show it: never the password. */
export const inletSchema = z.object({
  id: z.string(),
  kind: z.enum(INLET_KINDS),
  source: z.string(),
  /** The AMQP, Redis or NATS URL with its password masked. */
  url: z.string(),
  /** What is consumed: the AMQP queue, the BullMQ queue, `<stream>/<consumer>` for NATS. */
  queue: z.string(),
  settings: inletSettingsSchema,
  eventIdFrom: z.string(),
  prefetch: z.number().int().positive(),
  createdAt: instant,
  createdBy: z.string(),
  /** The consumer's last report: starting, consuming, or error (with lastError). */
  state: z.enum(INLET_STATES),
  lastError: z.string().nullable(),
  stateAt: instant.nullable(),
  lag: z.object({
    /** Messages waiting in the queue when last checked (null: never checked). */
    messages: z.number().int().nonnegative().nullable(),
    checkedAt: instant.nullable(),
    /** When the last message was stored, and how long after its dead-lettering. */
    lastMessageAt: instant.nullable(),
    lastMessageAgeSeconds: z.number().nullable(),
  }),
  /** Messages stored since the inlet was added (redeliveries of a stored one not counted). */
  consumed: z.number().int().nonnegative(),
});
export type Inlet = z.infer<typeof inletSchema>;
export const inletListSchema = z.object({ inlets: z.array(inletSchema) });
export type InletList = z.infer<typeof inletListSchema>;
export const removedInletSchema = z.object({ removed: inletSchema });
export type RemovedInlet = z.infer<typeof removedInletSchema>;
