/**
 * RabbitMQ inlets: add, list, remove (admins, the CLI), and what the consumer (consumer.ts) reads and
 * reports. The AMQP URL is stored encrypted like the signing secrets (lib/sources/signing-secret.ts:
 * AES-256-GCM under a key derived from the auth secret) and never returned: lists show it with the
 * password masked. Adding and removing are recorded in the operator action log. Running consumers pick
 * a change up within KEYWARD_INLET_POLL_MS.
 */
import { KeywardError } from "../errors";
import { isUniqueViolation } from "../db/errors";
import { query } from "../db/sql";
import { database, withTransaction, type Db } from "../db/transaction";
import { recordAction } from "../audit/actions";
import { actorOf, type Principal } from "../auth/principal";
import { authSecret } from "../auth/auth";
import { decryptSecret, encryptSecret } from "../sources/signing-secret";
import { UUID_RE } from "../deadletters/list";
import { checkQueue } from "../amqp/connect";
import { maskAmqpUrl } from "../amqp/url";
import type { CreateInletFields, Inlet, InletState } from "./schema";

type InletRow = {
  id: string;
  source: string;
  url_display: string;
  queue: string;
  event_id_from: string;
  prefetch: number;
  created_at: Date;
  created_by: string;
  state: InletState;
  last_error: string | null;
  state_at: Date | null;
  lag_messages: number | null;
  lag_checked_at: Date | null;
  last_message_at: Date | null;
  last_message_age_seconds: number | null;
  consumed: number;
};

const COLUMNS = `id, source, url_display, queue, event_id_from, prefetch, created_at, created_by, state, last_error, state_at,
  lag_messages::float8 AS lag_messages, lag_checked_at, last_message_at, last_message_age_seconds, consumed::float8 AS consumed`;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function toInlet(r: InletRow): Inlet {
  return {
    id: r.id,
    source: r.source,
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
  const [s] = await db.query<{ name: string }>("SELECT name FROM sources WHERE name = $1", [name]);
  if (!s) throw KeywardError.notFound("source_not_found", `no source named "${name}"`);
  return name;
}

/**
 * Adds an inlet to a source. Unless `check: false`, first connects and checks that the queue exists
 * (422 inlet_unreachable with the reason otherwise), so a typo is caught now rather than in the log.
 * 404 for an unknown source, 409 inlet_exists for the same queue on the same broker and user. Recorded.
 */
export async function createInlet(source: string, req: CreateInletFields, actor: Principal, db: Db = database()): Promise<Inlet> {
  const name = await assertSource(source, db);
  if (req.check) {
    try {
      await checkQueue(req.amqpUrl, req.queue);
    } catch (err) {
      throw KeywardError.unprocessable("inlet_unreachable", `cannot consume ${req.queue}: ${(err as Error).message}`, {
        fields: [{ field: "amqpUrl", message: (err as Error).message }],
      });
    }
  }
  const display = maskAmqpUrl(req.amqpUrl);
  const enc = encryptSecret(req.amqpUrl, await authSecret());
  try {
    return await withTransaction(async (tx) => {
      // Raw SQL: the float8 casts of COLUMNS (bigint counters) are shared with the consumer's reads.
      const [row] = await tx.query<InletRow>(
        `INSERT INTO inlets (source, url_display, url_enc, queue, event_id_from, prefetch, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
        [name, display, enc, req.queue, req.eventIdFrom, req.prefetch, actorOf(actor)],
      );
      const inlet = toInlet(row);
      await recordAction(
        actor,
        {
          action: "inlet.create",
          target: { type: "inlet", id: inlet.id },
          source: name,
          after: { url: inlet.url, queue: inlet.queue, eventIdFrom: inlet.eventIdFrom, prefetch: inlet.prefetch },
        },
        tx,
      );
      return inlet;
    }, { db });
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw KeywardError.conflict("inlet_exists", `source "${name}" already has an inlet on ${req.queue} at ${display}`);
    }
    throw err;
  }
}

/** The inlets of one source (404 when it does not exist), or of every source; by source, then creation. */
export async function listInlets(source?: string, db: Db = database()): Promise<Inlet[]> {
  const name = source === undefined ? undefined : await assertSource(source, db);
  const rows = await db.query<InletRow>(
    `SELECT ${COLUMNS} FROM inlets ${name ? "WHERE source = $1" : ""} ORDER BY source, created_at, id`,
    name ? [name] : [],
  );
  return rows.map(toInlet);
}

/** Removes an inlet (its dead letters stay); consumers stop within a poll. 404 for an unknown id. Recorded. */
export async function removeInlet(id: string, actor: Principal, db: Db = database()): Promise<{ removed: Inlet }> {
  const notFound = () => KeywardError.notFound("inlet_not_found", `no inlet ${id}`);
  if (!UUID_RE.test(id)) throw notFound();
  return withTransaction(async (tx) => {
    const [row] = await tx.query<InletRow>(`DELETE FROM inlets WHERE id = $1::uuid RETURNING ${COLUMNS}`, [id]);
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
  source: string;
  queue: string;
  eventIdFrom: string;
  prefetch: number;
  url: string | null;
};

/** The inlets to consume (all, or those in `only`), with their URLs decrypted. */
export async function loadInletConfigs(only?: readonly string[]): Promise<InletConfig[]> {
  const rows = await query<{ id: string; source: string; queue: string; event_id_from: string; prefetch: number; url_enc: string }>(
    `SELECT id, source, queue, event_id_from, prefetch, url_enc FROM inlets ${only ? "WHERE id = ANY($1::uuid[])" : ""} ORDER BY created_at`,
    only ? [only] : [],
  );
  if (rows.length === 0) return [];
  const key = await authSecret();
  return rows.map((r) => ({
    id: r.id,
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
  await query(
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
