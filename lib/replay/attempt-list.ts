/**
 * Reading a dead letter's replay attempts (its evidence), newest first, keyset-paginated on (at, id)
 * the one way every list pages (lib/pagination.ts): `{ items, next }`, `?cursor=` taking `next`.
 */
import "server-only";
import { KeywardError } from "../errors";
import { database, type Db } from "../db/transaction";
import { pageOf, type Page } from "../pagination";
import { UUID_RE } from "../deadletters/list";
import type { ReplayAttempt } from "./attempts";
import type { ListAttemptsQuery } from "./schema";

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

/** The attempts of one dead letter; 404 when the letter is unknown (or was pruned, with its attempts). */
export async function listAttempts(deadLetterId: string, q: ListAttemptsQuery, db: Db = database()): Promise<Page<ReplayAttempt>> {
  const notFound = () => KeywardError.notFound("dead_letter_not_found", `no dead letter ${deadLetterId}`);
  if (!UUID_RE.test(deadLetterId)) throw notFound();
  const values: unknown[] = [deadLetterId];
  const p = (v: unknown) => `$${values.push(v)}`;
  // `at` is written from the executor's clock (milliseconds), so the cursor's instant compares exactly.
  const page = q.cursor ? `AND (a.at, a.id) < (${p(q.cursor.at)}::timestamptz, ${p(q.cursor.id)}::bigint)` : "";
  const letter = await db.prisma.deadLetter.findUnique({ where: { id: deadLetterId }, select: { id: true } });
  if (!letter) throw notFound();
  // Raw SQL: the keyset row comparison on the (dead_letter_id, at DESC, id DESC) index.
  const rows = await db.query<Row>(
      `SELECT a.id::text AS id, a.replay_id, a.attempt, a.at, a.destination, a.status, a.latency_ms, a.response_body, a.error, a.outcome
       FROM replay_attempts a WHERE a.dead_letter_id = $1 ${page}
       ORDER BY a.at DESC, a.id DESC LIMIT ${p(q.limit + 1)}`,
    values,
  );
  return pageOf(
    rows,
    q.limit,
    (a) => ({
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
    }),
    (last) => ({ at: last.at.toISOString(), id: last.id }),
  );
}
