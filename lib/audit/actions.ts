/**
 * The operator action log: every state-changing action by a person, an API key or the CLI (source
 * changes, key extend/release, prune, replay, user and key management, sign-in success and failure) is
 * appended to the audit history as `kind = 'operator'`, with actor, action, target, time and, where it
 * applies, before/after. Written in the same transaction as the change when there is one, so a change
 * is never without its record and a rolled-back change leaves none.
 */
import "server-only";
import { z } from "zod";
import type { Prisma } from "@/lib/db/generated/client";
import { database, type Db } from "@/lib/db/transaction";
import { actorOf, type Principal } from "@/lib/auth/principal";
import { storableText } from "@/lib/http/fields";
import { pageOf, type Page } from "@/lib/pagination";
import { auditCursor, type ActionRecord } from "./schema";
import { AUDIT_COLUMNS, DbRow, positionOf, toAuditRow } from "./search";
import { query, sqlParams } from "@/lib/db/sql";

export const OPERATOR_KIND = "operator";

export type ActionEntry = {
  /** e.g. `user.create`, `api_key.revoke`, `source.update`, `sign_in` */
  action: string;
  /** What was acted on, e.g. `{ type: "user", id: "alice" }`. */
  target?: { type: string; id: string };
  outcome?: "ok" | "refused" | "failed";
  reason?: string;
  before?: unknown;
  after?: unknown;
  /** Client address, where the action came over HTTP. */
  address?: string;
  /** Set to record an action on a source's keys under that source, so it shows in the source's history. */
  source?: string;
  eventId?: string;
};

/**
 * Appends one action. `actor` is a principal, or a string for a not-yet-authenticated caller (`anonymous`).
 * Pass the transaction's handle to record a change in the change's own transaction.
 */
export async function recordAction(actor: Principal | string, entry: ActionEntry, db: Db = database()): Promise<void> {
  const actorText = typeof actor === "string" ? actor : actorOf(actor);
  const detail: Record<string, unknown> = { action: entry.action, outcome: entry.outcome ?? "ok" };
  if (typeof actor !== "string" && actor.kind === "apikey") detail.actor_id = actor.id;
  if (entry.target) detail.target = entry.target;
  if (entry.reason) detail.reason = entry.reason;
  if (entry.before !== undefined) detail.before = entry.before;
  if (entry.after !== undefined) detail.after = entry.after;
  if (entry.address) detail.address = entry.address;
  await db.prisma.auditEvent.create({
    data: {
      kind: OPERATOR_KIND,
      actor: actorText,
      source: entry.source ?? null,
      eventId: entry.eventId ?? null,
      detail: detail as Prisma.InputJsonValue,
    },
  });
}

export const listActionsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  /** Keyset pagination: only actions older than this cursor (the previous page's `next`), as in the audit search. */
  cursor: auditCursor.optional(),
  actor: storableText().max(200).optional(),
  action: storableText().max(100).optional(),
});
export type ListActionsQuery = z.infer<typeof listActionsQuery>;

export type { ActionRecord } from "./schema";

/**
 * Newest first, keyset-paginated exactly like the audit search (lib/audit/search.ts: the cursor is the
 * last row's exact `(at, id)`, so no row is skipped or repeated); reads only `kind = 'operator'` rows
 * through the (kind, at) index. Raw SQL: the keyset row value and a filter on a jsonb field.
 */
export async function listActions(q: ListActionsQuery, db: Db = database()): Promise<Page<ActionRecord>> {
  const { values, p } = sqlParams();
  const where = [`kind = ${p(OPERATOR_KIND)}`];
  if (q.actor) where.push(`actor = ${p(q.actor)}`);
  if (q.action) where.push(`detail->>'action' = ${p(q.action)}`);
  if (q.cursor) where.push(`(at, id) < (${p(q.cursor.at)}::timestamptz, ${p(q.cursor.id)}::bigint)`);
  const rows = (
    await query(
      DbRow,
      `SELECT ${AUDIT_COLUMNS} FROM audit_events WHERE ${where.join(" AND ")}
       ORDER BY audit_events.at DESC, audit_events.id DESC LIMIT ${p(q.limit + 1)}`,
      values,
      db,
    )
  ).map(toAuditRow);
  return pageOf(rows, q.limit, toActionRecord, positionOf);
}

function toActionRecord(r: ReturnType<typeof toAuditRow>): ActionRecord {
  const detail = r.detail ?? {};
  return {
    id: r.id,
    at: r.at,
    actor: r.actor ?? "",
    action: String(detail.action ?? ""),
    outcome: String(detail.outcome ?? "ok"),
    target: (detail.target as ActionRecord["target"]) ?? null,
    source: r.source,
    detail,
  };
}
