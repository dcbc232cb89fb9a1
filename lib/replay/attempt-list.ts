/**
 * Reading a dead letter's replay attempts (its evidence), newest first, keyset-paginated on (at, id):
 * `{ items, next }`, `?cursor=` taking the previous page's `next`.
 */
import { z } from "zod";
import { KeywardError } from "../errors";
import { query } from "../db/sql";
import { isInstant } from "../http/fields";
import { parseOrThrow } from "../http/validate";
import { UUID_RE } from "../deadletters/list";
import type { ReplayAttempt } from "./attempts";

export const listAttemptsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(200).optional(),
});

type Row = {
  id: string;
  replay_id: string;
  attempt: number;
  at: Date;
  destination: string;
  status: number | null;
  latency_ms: number;
  response_body: string | null;
  error: string | null;
  outcome: ReplayAttempt["outcome"];
};

const badCursor = () =>
  KeywardError.unprocessable("invalid_request", "cursor: must be a cursor from a previous page", {
    fields: [{ field: "cursor", message: "must be a cursor from a previous page" }],
  });

/** The cursor: base64url of `<at ISO>_<id>` of the last item of the page. */
function decodeCursor(text: string): { at: string; id: string } {
  const m = /^(\d{4}-\d\d-\d\dT[\d:.]+Z)_(\d{1,19})$/.exec(Buffer.from(text, "base64url").toString("utf8"));
  if (!m || !isInstant(m[1])) throw badCursor();
  return { at: m[1], id: m[2] };
}

/** The attempts of one dead letter; 404 when the letter is unknown (or was pruned, with its attempts). */
export async function listAttempts(deadLetterId: string, input: unknown): Promise<{ items: ReplayAttempt[]; next: string | null }> {
  const notFound = () => KeywardError.notFound("dead_letter_not_found", `no dead letter ${deadLetterId}`);
  if (!UUID_RE.test(deadLetterId)) throw notFound();
  const q = parseOrThrow(listAttemptsQuery, input);
  const values: unknown[] = [deadLetterId];
  const p = (v: unknown) => `$${values.push(v)}`;
  let page = "";
  if (q.cursor) {
    const c = decodeCursor(q.cursor);
    page = `AND (a.at, a.id) < (${p(c.at)}::timestamptz, ${p(c.id)}::bigint)`;
  }
  const [rows, [letter]] = await Promise.all([
    query<Row>(
      `SELECT a.id::text AS id, a.replay_id, a.attempt, a.at, a.destination, a.status, a.latency_ms, a.response_body, a.error, a.outcome
       FROM replay_attempts a WHERE a.dead_letter_id = $1 ${page}
       ORDER BY a.at DESC, a.id DESC LIMIT ${p(q.limit + 1)}`,
      values,
    ),
    query<{ id: string }>("SELECT id FROM dead_letters WHERE id = $1", [deadLetterId]),
  ]);
  if (!letter) throw notFound();
  const items = rows.slice(0, q.limit);
  const last = items[items.length - 1];
  return {
    items: items.map((a) => ({
      id: a.id,
      replayId: a.replay_id,
      attempt: a.attempt,
      at: a.at.toISOString(),
      destination: a.destination,
      status: a.status,
      latencyMs: a.latency_ms,
      responseBody: a.response_body,
      error: a.error,
      outcome: a.outcome,
    })),
    next: rows.length > q.limit && last ? Buffer.from(`${last.at.toISOString()}_${last.id}`).toString("base64url") : null,
  };
}
