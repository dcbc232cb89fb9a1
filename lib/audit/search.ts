/**
 * Searching the audit history: newest first, keyset-paginated on the primary key (at, id) — a cursor is
 * the last row's exact (at, id), so a page never skips or repeats a row, however many rows arrive while
 * someone pages. Every search is bounded in time (see resolveRange), so PostgreSQL reads only the
 * monthly partitions of that range.
 */
import "server-only";
import { z } from "zod";
import { loadEnv } from "@/lib/config/env";
import { createHash } from "node:crypto";
import type { PreparedSql } from "@/lib/db/sql";
import { readQuery } from "@/lib/db/read";
import { KeywardError } from "@/lib/errors";
import { pageOf } from "@/lib/pagination";
import { DEFAULT_RANGE_DAYS, type AuditFilters, type AuditPage, type AuditPosition, type AuditRow, type AuditSearchQuery } from "./schema";
import { sqlParams } from "@/lib/db/sql";
import type { Db } from "@/lib/db/transaction";

const DAY_MS = 86400 * 1000;

export function auditRetentionDays(): number {
  return Math.max(90, loadEnv().KEYWARD_AUDIT_RETENTION_DAYS);
}

/**
 * The time range a search reads: `from` inclusive, `to` exclusive (null: up to now, rows still arriving
 * included). Defaults: `from` is 30 days before `to` (or now), or, for an exact eventId, the whole
 * retention. A range wider than the retention, or one that ends before it starts, is a 422.
 */
export function resolveRange(f: Pick<AuditFilters, "from" | "to" | "eventId">, now: Date, retentionDays: number): { from: Date; to: Date | null } {
  const to = f.to ? new Date(f.to) : null;
  const end = to ?? now;
  const from = f.from ? new Date(f.from) : new Date(end.getTime() - (f.eventId ? retentionDays : DEFAULT_RANGE_DAYS) * DAY_MS);
  if (to && from.getTime() >= to.getTime()) {
    throw KeywardError.unprocessable("invalid_range", "from must be before to", { field: "from" });
  }
  if (end.getTime() - from.getTime() > retentionDays * DAY_MS) {
    throw KeywardError.unprocessable(
      "range_too_wide",
      `the range from ${from.toISOString()} to ${to ? to.toISOString() : "now"} is wider than the audit retention of ${retentionDays} days (KEYWARD_AUDIT_RETENTION_DAYS)`,
      { field: "from", retentionDays },
    );
  }
  return { from, to };
}

/** `abc_%` → `abc\_\%`: a prefix matched literally by LIKE. */
export function likePrefix(prefix: string): string {
  return prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
}

export const DbRow = z.object({
  id: z.string(),
  at: z.string(),
  source: z.string().nullable(),
  event_id: z.string().nullable(),
  event_type: z.string().nullable(),
  kind: z.string(),
  actor: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()).nullable(),
});
export type DbRow = z.output<typeof DbRow>;

/** Output names shadow the table's columns in ORDER BY: order by `audit_events.at`, never by a bare `at`. */
export const AUDIT_COLUMNS = `id::text AS id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at,
  source, event_id, event_type, kind, actor, detail`;

export function toAuditRow(r: DbRow): AuditRow {
  return { id: r.id, at: r.at, source: r.source, eventId: r.event_id, eventType: r.event_type, kind: r.kind, actor: r.actor, detail: r.detail };
}

/**
 * The SELECT of one page: filters, range, the position to start after, newest first. Raw SQL: a keyset
 * condition on the (at, id) row value, prepared per filter combination (below).
 */
export function auditPageSql(
  f: AuditFilters,
  range: { from: Date; to: Date | null },
  after: AuditPosition | undefined,
  limit: number,
): PreparedSql & { values: unknown[] } {
  const { values, p } = sqlParams();
  const where = [`at >= ${p(range.from)}`];
  if (range.to) where.push(`at < ${p(range.to)}`);
  if (f.source) where.push(`source = ${p(f.source)}`);
  if (f.eventId) where.push(`event_id = ${p(f.eventId)}`);
  if (f.eventIdPrefix) where.push(`event_id LIKE ${p(likePrefix(f.eventIdPrefix))}`);
  if (f.eventType) where.push(`event_type = ${p(f.eventType)}`);
  if (f.kind) where.push(`kind = ${p(f.kind)}`);
  if (f.actor) where.push(`actor = ${p(f.actor)}`);
  if (after) where.push(`(at, id) < (${p(after.at)}::timestamptz, ${p(after.id)}::bigint)`);
  const text = `SELECT ${AUDIT_COLUMNS} FROM audit_events WHERE ${where.join(" AND ")} ORDER BY audit_events.at DESC, audit_events.id DESC LIMIT ${p(limit)}`;
  // Prepared per connection, one name per filter combination: planning a statement over a year of
  // partitions and their indexes costs more than running it (docs/benchmarks.md#audit-search).
  return { name: `keyward_audit_${createHash("sha1").update(text).digest("hex").slice(0, 16)}`, text, values };
}

/** A row's position, for the next page's cursor. */
export const positionOf = (r: AuditRow): AuditPosition => ({ at: r.at, id: r.id });

/** One page of a search. `now` is the server's clock (the range defaults are computed from it). */
export async function searchAudit(q: AuditSearchQuery, now = new Date(), db?: Db): Promise<AuditPage> {
  const range = resolveRange(q, now, auditRetentionDays());
  const { values, ...sql } = auditPageSql(q, range, q.cursor, q.limit + 1);
  const rows = (await readQuery(DbRow, sql, values, db)).map(toAuditRow); // a read replica's, when configured
  return {
    ...pageOf(rows, q.limit, (r) => r, positionOf),
    range: { from: range.from.toISOString(), to: range.to?.toISOString() ?? null },
  };
}
