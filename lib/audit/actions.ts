/**
 * The operator action log: every state-changing action by a person, an API key or the CLI (source
 * changes, key extend/release, prune, replay, user and key management, sign-in success and failure) is
 * appended to the audit history as `kind = 'operator'`, with actor, action, target, time and, where it
 * applies, before/after. Written in the same transaction as the change when there is one, so a change
 * is never without its record and a rolled-back change leaves none.
 */
import { z } from "zod";
import { prisma } from "../db/client";
import type { Prisma, PrismaClient } from "../db/generated/client";
import { actorOf, type Principal } from "../auth/principal";

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

type Db = PrismaClient | Prisma.TransactionClient;

/** Appends one action. `actor` is a principal, or a string for a not-yet-authenticated caller (`anonymous`). */
export async function recordAction(actor: Principal | string, entry: ActionEntry, db: Db = prisma()): Promise<void> {
  const actorText = typeof actor === "string" ? actor : actorOf(actor);
  const detail: Record<string, unknown> = { action: entry.action, outcome: entry.outcome ?? "ok" };
  if (typeof actor !== "string" && actor.kind === "apikey") detail.actor_id = actor.id;
  if (entry.target) detail.target = entry.target;
  if (entry.reason) detail.reason = entry.reason;
  if (entry.before !== undefined) detail.before = entry.before;
  if (entry.after !== undefined) detail.after = entry.after;
  if (entry.address) detail.address = entry.address;
  await db.auditEvent.create({
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
  /** Keyset pagination: only actions older than this cursor (`<at ISO>_<id>` from the previous page). */
  before: z
    .string()
    .regex(/^\d{4}-\d\d-\d\dT[\d:.]+Z_\d{1,18}$/, "must be a cursor from a previous page")
    .refine((c) => !Number.isNaN(Date.parse(c.split("_")[0])), "must be a cursor from a previous page")
    .optional(),
  actor: z.string().max(200).optional(),
  action: z.string().max(100).optional(),
});
export type ListActionsQuery = z.infer<typeof listActionsQuery>;

export type ActionRecord = {
  id: string;
  at: string;
  actor: string;
  action: string;
  outcome: string;
  target: { type: string; id: string } | null;
  source: string | null;
  detail: Record<string, unknown>;
};

/** Newest first, keyset-paginated; reads only `kind = 'operator'` rows through the (kind, at) index. */
export async function listActions(q: ListActionsQuery): Promise<{ actions: ActionRecord[]; next: string | null }> {
  let cursor: { at: Date; id: bigint } | undefined;
  if (q.before) {
    const [at, id] = q.before.split("_");
    cursor = { at: new Date(at), id: BigInt(id) };
  }
  const rows = await prisma().auditEvent.findMany({
    where: {
      kind: OPERATOR_KIND,
      ...(q.actor ? { actor: q.actor } : {}),
      ...(q.action ? { detail: { path: ["action"], equals: q.action } } : {}),
      // `at` has microseconds but the cursor milliseconds: within the cursor's millisecond, the id decides.
      ...(cursor
        ? {
            at: { lt: new Date(cursor.at.getTime() + 1) },
            OR: [{ at: { lt: cursor.at } }, { id: { lt: cursor.id } }],
          }
        : {}),
    },
    orderBy: [{ at: "desc" }, { id: "desc" }],
    take: q.limit + 1,
  });
  const page = rows.slice(0, q.limit);
  const actions = page.map((r) => {
    const detail = (r.detail ?? {}) as Record<string, unknown>;
    return {
      id: String(r.id),
      at: r.at.toISOString(),
      actor: r.actor ?? "",
      action: String(detail.action ?? ""),
      outcome: String(detail.outcome ?? "ok"),
      target: (detail.target as ActionRecord["target"]) ?? null,
      source: r.source,
      detail,
    };
  });
  const last = page[page.length - 1];
  return { actions, next: rows.length > q.limit && last ? `${last.at.toISOString()}_${last.id}` : null };
}
