/**
 * Inlets (RabbitMQ, BullMQ, NATS JetStream): add, list, remove (admins, the CLI), and what the consumer
 * (consumer.ts) reads and reports. The broker's URL is stored encrypted like the signing secrets
 * (lib/sources/signing-secret.ts: AES-256-GCM under a key derived from the auth secret) and never
 * returned: lists show it with the password masked. Adding and removing are recorded in the operator
 * action log. Running consumers pick a change up within KEYWARD_INLET_POLL_MS.
 */
import { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { isUniqueViolation } from "@/lib/db/errors";
import { execute, query } from "@/lib/db/sql";
import { database, withTransaction, type Db } from "@/lib/db/transaction";
import { recordAction } from "@/lib/audit/actions";
import { actorOf, type Principal } from "@/lib/auth/principal";
import { authSecret } from "@/lib/auth/auth";
import { decryptSecret, encryptSecret } from "@/lib/sources/signing-secret";
import { inletKind, maskServiceUrl } from "./kinds";
import { DEFAULT_EVENT_ID_FROMS, INLET_KINDS, INLET_STATES, inletSettingsSchema, type CreateInletFields, type Inlet, type InletKind, type InletSettings, type InletState } from "./schema";

const InletRow = z.object({
  id: z.string(),
  kind: z.enum(INLET_KINDS),
  settings: inletSettingsSchema,
  source: z.string(),
  url_display: z.string(),
  queue: z.string(),
  event_id_from: z.string(),
  prefetch: z.number(),
  created_at: z.date(),
  created_by: z.string(),
  state: z.enum(INLET_STATES),
  last_error: z.string().nullable(),
  state_at: z.date().nullable(),
  lag_messages: z.number().nullable(),
  lag_checked_at: z.date().nullable(),
  last_message_at: z.date().nullable(),
  last_message_age_seconds: z.number().nullable(),
  consumed: z.number(),
});
type InletRow = z.output<typeof InletRow>;

const COLUMNS = `id, kind, settings, source, url_display, queue, event_id_from, prefetch, created_at, created_by, state, last_error, state_at,
  lag_messages::float8 AS lag_messages, lag_checked_at, last_message_at, last_message_age_seconds, consumed::float8 AS consumed`;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function toInlet(r: InletRow): Inlet {
  return {
    id: r.id,
    kind: r.kind,
    source: r.source,
    settings: r.settings,
    url: r.url_display,
    queue: r.queue,
    eventIdFrom: r.event_id_from,
    prefetch: r.prefetch,
    createdAt: r.created_at.toISOString(),
    createdBy: r.created_by,
    state: r.state,
    lastError: r.last_error,
    stateAt: iso(r.state_at),
    lag: {
      messages: r.lag_messages,
      checkedAt: iso(r.lag_checked_at),
      lastMessageAt: iso(r.last_message_at),
      lastMessageAgeSeconds: r.last_message_age_seconds,
    },
    consumed: r.consumed,
  };
}

async function assertSource(name: string, db: Db): Promise<string> {
  const [s] = await query(z.object({ name: z.string() }), "SELECT name FROM sources WHERE name = $1", [name], db);
  if (!s) throw KeywardError.notFound("source_not_found", `no source named "${name}"`);
  return name;
}

/** What an inlet request becomes: the URL, what is consumed, the kind's settings. Pure. */
export function inletTarget(req: CreateInletFields): { url: string; queue: string; settings: InletSettings; eventIdFrom: string } {
  const eventIdFrom = req.eventIdFrom ?? DEFAULT_EVENT_ID_FROMS[req.kind];
  if (req.kind === "bullmq") return { url: req.redisUrl!, queue: req.queue!, settings: { prefix: req.prefix ?? "bull" }, eventIdFrom };
  if (req.kind === "nats") {
    const advisoryStream = req.advisoryStream ?? `KEYWARD_DLQ_${req.stream}_${req.consumer}`;
    return { url: req.natsUrl!, queue: `${req.stream}/${req.consumer}`, settings: { stream: req.stream, consumer: req.consumer, advisoryStream }, eventIdFrom };
  }
  return { url: req.amqpUrl!, queue: req.queue!, settings: {}, eventIdFrom };
}

/**
 * Adds an inlet to a source. Unless `check: false`, first connects and checks that what it consumes
 * exists (the queue; the stream and consumer), 422 inlet_unreachable with the reason otherwise, so a typo
 * is caught now rather than in the log. 404 for an unknown source, 409 inlet_exists for the same queue on
 * the same broker and user. Recorded.
 */
export async function createInlet(source: string, req: CreateInletFields, actor: Principal, db: Db = database()): Promise<Inlet> {
  const name = await assertSource(source, db);
  const target = inletTarget(req);
  const urlField = req.kind === "bullmq" ? "redisUrl" : req.kind === "nats" ? "natsUrl" : "amqpUrl";
  if (req.check) {
    try {
      await inletKind(req.kind).check({ url: target.url, queue: target.queue, settings: target.settings });
    } catch (err) {
      throw KeywardError.unprocessable("inlet_unreachable", `cannot consume ${target.queue}: ${(err as Error).message}`, {
        fields: [{ field: urlField, message: (err as Error).message }],
      });
    }
  }
  const display = maskServiceUrl(target.url);
  const enc = encryptSecret(target.url, await authSecret());
  try {
    return await withTransaction(async (tx) => {
      // Raw SQL: the float8 casts of COLUMNS (bigint counters) are shared with the consumer's reads.
      const [row] = await query(
        InletRow,
        `INSERT INTO inlets (kind, settings, source, url_display, url_enc, queue, event_id_from, prefetch, created_by)
         VALUES ($1, $2::jsonb, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
        [req.kind, JSON.stringify(target.settings), name, display, enc, target.queue, target.eventIdFrom, req.prefetch, actorOf(actor)],
        tx,
      );
      const inlet = toInlet(row);
      await recordAction(
        actor,
        {
          action: "inlet.create",
          target: { type: "inlet", id: inlet.id },
          source: name,
          after: { kind: inlet.kind, url: inlet.url, queue: inlet.queue, settings: inlet.settings, eventIdFrom: inlet.eventIdFrom, prefetch: inlet.prefetch },
        },
        tx,
      );
      return inlet;
    }, { db });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw KeywardError.conflict("inlet_exists", `source "${name}" already has an inlet on ${target.queue} at ${display}`);
    }
    throw err;
  }
}

/** The inlets of one source (404 when it does not exist), or of every source; by source, then creation. */
export async function listInlets(source?: string, db: Db = database()): Promise<Inlet[]> {
  const name = source === undefined ? undefined : await assertSource(source, db);
  const rows = await query(
    InletRow,
    `SELECT ${COLUMNS} FROM inlets ${name ? "WHERE source = $1" : ""} ORDER BY source, created_at, id`,
    name ? [name] : [],
    db,
  );
  return rows.map(toInlet);
}

/** Removes an inlet (its dead letters stay); consumers stop within a poll. 404 for an unknown id. Recorded. */
export async function removeInlet(id: string, actor: Principal, db: Db = database()): Promise<{ removed: Inlet }> {
  const notFound = () => KeywardError.notFound("inlet_not_found", `no inlet ${id}`);
  return withTransaction(async (tx) => {
    const [row] = await query(InletRow, `DELETE FROM inlets WHERE id = $1::uuid RETURNING ${COLUMNS}`, [id], tx);
    if (!row) throw notFound();
    const removed = toInlet(row);
    await recordAction(
      actor,
      { action: "inlet.remove", target: { type: "inlet", id }, source: removed.source, before: { url: removed.url, queue: removed.queue } },
      tx,
    );
    return { removed };
  }, { db });
}

/** What a consumer needs to run an inlet: its URL decrypted (null when the auth secret changed). */
export type InletConfig = {
  id: string;
  kind: InletKind;
  settings: InletSettings;
  source: string;
  queue: string;
  eventIdFrom: string;
  prefetch: number;
  url: string | null;
};

/** The inlets to consume (all, or those in `only`), with their URLs decrypted. */
export async function loadInletConfigs(only?: readonly string[]): Promise<InletConfig[]> {
  const rows = await query(
    z.object({ id: z.string(), kind: z.enum(INLET_KINDS), settings: inletSettingsSchema, source: z.string(), queue: z.string(), event_id_from: z.string(), prefetch: z.number(), url_enc: z.string() }),
    `SELECT id, kind, settings, source, queue, event_id_from, prefetch, url_enc FROM inlets ${only ? "WHERE id = ANY($1::uuid[])" : ""} ORDER BY created_at`,
    only ? [only] : [],
  );
  if (rows.length === 0) return [];
  const key = await authSecret();
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    settings: r.settings,
    source: r.source,
    queue: r.queue,
    eventIdFrom: r.event_id_from,
    prefetch: r.prefetch,
    url: decryptSecret(r.url_enc, key),
  }));
}

export type InletReport = {
  state: InletState;
  error?: string | null;
  /** The queue's ready messages, when just checked. */
  lagMessages?: number;
  /** Messages newly stored since the last report, and the newest one's storage time and age then. */
  consumed?: number;
  lastMessageAt?: Date;
  lastMessageAgeSeconds?: number;
};

/** Writes a consumer's report on its inlet (a removed inlet: nothing). */
export async function reportInlet(id: string, r: InletReport): Promise<void> {
  await execute(
    `UPDATE inlets SET state = $2, last_error = $3, state_at = now(),
            lag_messages = coalesce($4::bigint, lag_messages),
            lag_checked_at = CASE WHEN $4::bigint IS NULL THEN lag_checked_at ELSE now() END,
            consumed = consumed + $5::bigint,
            last_message_at = coalesce($6::timestamptz, last_message_at),
            last_message_age_seconds = coalesce($7::float8, last_message_age_seconds)
     WHERE id = $1::uuid`,
    [id, r.state, r.error ?? null, r.lagMessages ?? null, r.consumed ?? 0, r.lastMessageAt ?? null, r.lastMessageAgeSeconds ?? null],
  );
}
