/**
 * Reading a dead letter's replay attempts (its evidence), newest first, keyset-paginated on (at, id)
 * the one way every list pages (lib/pagination.ts): `{ items, next }`, `?cursor=` taking `next`.
 */
import "server-only";
import { z } from "zod";
import { KeywardError } from "@/lib/errors";
import { database, type Db } from "@/lib/db/transaction";
import { pageOf, type Page } from "@/lib/pagination";
import type { ReplayAttempt } from "./schema";
import type { ListAttemptsQuery } from "./schema";
import { query, sqlParams } from "@/lib/db/sql";

const Row = z.object({
  id: z.string(),
  replay_id: z.string(),
  attempt: z.number(),
  at: z.date(),
  destination: z.string(),
  status: z.number().nullable(),
  latency_ms: z.number(),
  response_body: z.string().nullable(),
  request_headers: z.array(z.tuple([z.string(), z.string()])).nullable(),
  response_headers: z.array(z.tuple([z.string(), z.string()])).nullable(),
  error: z.string().nullable(),
  outcome: z.enum(["delivered", "retry", "failed", "cancelled"]),
});
type Row = z.output<typeof Row>;

/** The attempts of one dead letter; 404 when the letter is unknown (or was pruned, with its attempts). */
export async function listAttempts(deadLetterId: string, q: ListAttemptsQuery, db: Db = database()): Promise<Page<ReplayAttempt>> {
  const notFound = () => KeywardError.notFound("dead_letter_not_found", `no dead letter ${deadLetterId}`);
  const { values, p } = sqlParams(deadLetterId);
  // `at` is written from the executor's clock (milliseconds), so the cursor's instant compares exactly.
  const page = q.cursor ? `AND (a.at, a.id) < (${p(q.cursor.at)}::timestamptz, ${p(q.cursor.id)}::bigint)` : "";
  const letter = await db.prisma.deadLetter.findUnique({ where: { id: deadLetterId }, select: { id: true } });
  if (!letter) throw notFound();
  // Raw SQL: the keyset row comparison on the (dead_letter_id, at DESC, id DESC) index.
  const rows = await query(
      Row,
      `SELECT a.id::text AS id, a.replay_id, a.attempt, a.at, a.destination, a.status, a.latency_ms, a.response_body, a.error, a.outcome,
              a.request_headers, a.response_headers
       FROM replay_attempts a WHERE a.dead_letter_id = $1 ${page}
       ORDER BY a.at DESC, a.id DESC LIMIT ${p(q.limit + 1)}`,
    values,
    db,
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
      requestHeaders: a.request_headers,
      responseHeaders: a.response_headers,
      error: a.error,
      outcome: a.outcome,
    }),
    (last) => ({ at: last.at.toISOString(), id: last.id }),
  );
}
