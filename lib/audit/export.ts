/**
 * CSV export of an audit search, streamed: the rows are read in keyset batches (the search's own page
 * statement, EXPORT_BATCH rows at a time) only as fast as the client reads the response (a pull-based
 * web ReadableStream), so memory stays at one batch however many rows the search matches.
 *
 * Cells are escaped by csv-stringify (RFC 4180 quoting). Cells that a spreadsheet would run as a formula
 * (starting with = + - @, tab or carriage return) are prefixed with a single quote: event ids, types,
 * actors and details come from senders and callers, and must not execute when the file is opened.
 */
import { stringify } from "csv-stringify/sync";
import { query } from "../db/sql";
import { auditPageSql, auditRetentionDays, cursorOf, resolveRange, toAuditRow } from "./search";
import type { AuditFilters, AuditRow } from "./schema";

export const EXPORT_BATCH = 1000;
export const CSV_COLUMNS = ["id", "at", "source", "event_id", "event_type", "kind", "actor", "detail"] as const;

/** A cell as written: formula-looking text is defused with a leading single quote. */
export function csvCell(v: string | null): string {
  if (v === null) return "";
  return /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
}

export function csvRecord(r: AuditRow): string[] {
  return [r.id, r.at, r.source, r.eventId, r.eventType, r.kind, r.actor, r.detail === null ? null : JSON.stringify(r.detail)].map(csvCell);
}

export type ExportOptions = { batchSize?: number; now?: Date; onBatch?: (rows: number) => void };

/**
 * The CSV of every row a search matches, newest first, as a stream. The range is resolved and the first
 * batch read before this resolves, so a bad filter is a 422 and an unreachable database a 503, not a
 * truncated file.
 */
export async function exportAuditCsv(f: AuditFilters, o: ExportOptions = {}): Promise<ReadableStream<Uint8Array>> {
  const batchSize = o.batchSize ?? EXPORT_BATCH;
  const range = resolveRange(f, o.now ?? new Date(), auditRetentionDays());
  const encoder = new TextEncoder();
  const readBatch = async (cursor: string | undefined) => {
    const { values, ...sql } = auditPageSql(f, range, cursor, batchSize);
    const rows = (await query<Parameters<typeof toAuditRow>[0]>(sql, values)).map(toAuditRow);
    o.onBatch?.(rows.length);
    return rows;
  };
  let pending: AuditRow[] | null = await readBatch(undefined);
  let header = true;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const rows: AuditRow[] = pending ?? [];
        pending = null;
        const chunk = stringify(rows.map(csvRecord), header ? { header: true, columns: [...CSV_COLUMNS] } : {});
        header = false;
        if (chunk) controller.enqueue(encoder.encode(chunk));
        if (rows.length < batchSize) {
          controller.close();
          return;
        }
        try {
          pending = await readBatch(cursorOf(rows[rows.length - 1]));
        } catch (err) {
          // Headers are sent: the only honest signal left is an aborted (truncated) response.
          controller.error(err);
        }
      },
    },
    { highWaterMark: 0 },
  );
}
