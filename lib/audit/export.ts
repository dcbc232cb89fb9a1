/**
 * CSV export of an audit search, streamed: the rows are read in keyset batches (the search's own page
 * statement, EXPORT_BATCH rows at a time) only as fast as the client reads the response (a pull-based
 * web ReadableStream), so memory stays at one batch however many rows the search matches.
 *
 * Cells are escaped by csv-stringify (RFC 4180 quoting), and quoted too when they hold `;` or a tab. Event
 * ids, types, actors and details come from senders and callers, and must not execute when the file is
 * opened, even in a spreadsheet that splits lines on `;` or tabs (the list separator of many locales)
 * and so ignores our quotes: a formula (= + - @) at the start of a cell, or after a separator or line
 * break inside it, is prefixed with a single quote (csvCell).
 */
import "server-only";
import { stringify } from "csv-stringify/sync";
import { readQuery } from "@/lib/db/read";
import { auditPageSql, auditRetentionDays, DbRow, positionOf, resolveRange, toAuditRow } from "./search";
import type { AuditFilters, AuditPosition, AuditRow } from "./schema";

export const EXPORT_BATCH = 1000;
export const CSV_COLUMNS = ["id", "at", "source", "event_id", "event_type", "kind", "actor", "detail"] as const;

/** A formula trigger at the start of a cell (a leading tab or CR too: spreadsheets skip them). */
const LEADING_FORMULA = /^[=+\-@\t\r]/;
/** A formula trigger after something a spreadsheet may split a cell on (spaces between included). */
const FORMULA_AFTER_SEPARATOR = /([;,\t\r\n|][ \t]*)(?=[=+\-@])/g;

/**
 * A cell as written: formula-looking text is defused with a single quote, at the start of the cell and
 * after every `;`, `,`, `|`, tab or line break inside it (`abc;=1+1` → `abc;'=1+1`).
 */
export function csvCell(v: string | null): string {
  if (v === null) return "";
  const inner = v.replace(FORMULA_AFTER_SEPARATOR, "$1'");
  return LEADING_FORMULA.test(inner) ? `'${inner}` : inner;
}

/**
 * csv-stringify quotes cells holding `,`, `"` or a line break (RFC 4180); cells holding `;` or a tab are
 * quoted as well, so that a reader splitting on those keeps them whole.
 */
const CSV_OPTIONS = { quoted_match: /[;\t]/ };

/** Records as CSV text (with the header line first when asked). */
export function csvText(records: string[][], header: boolean): string {
  return stringify(records, header ? { ...CSV_OPTIONS, header: true, columns: [...CSV_COLUMNS] } : CSV_OPTIONS);
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
  const readBatch = async (after: AuditPosition | undefined) => {
    const { values, ...sql } = auditPageSql(f, range, after, batchSize);
    const rows = (await readQuery(DbRow, sql, values)).map(toAuditRow);
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
        const chunk = csvText(rows.map(csvRecord), header);
        header = false;
        if (chunk) controller.enqueue(encoder.encode(chunk));
        if (rows.length < batchSize) {
          controller.close();
          return;
        }
        try {
          pending = await readBatch(positionOf(rows[rows.length - 1]));
        } catch (err) {
          // Headers are sent: the only honest signal left is an aborted (truncated) response.
          controller.error(err);
        }
      },
    },
    { highWaterMark: 0 },
  );
}
