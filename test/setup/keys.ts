/** Inserting many keys at once with a chosen expiry, straight into dedup_keys (for pruning tests and benches). */
import { sql } from "./db";

/**
 * Inserts `n` done keys `<prefix><i>` (i = 1…n) for `source`; `expiresAt` is an SQL expression in `i`,
 * evaluated by the database, e.g. `now() - interval '1 hour' + i * interval '1 ms'`.
 */
export async function insertKeys(source: string, n: number, expiresAt: string, prefix = "k"): Promise<void> {
  await sql(
    `INSERT INTO dedup_keys (source, event_id, event_type, status, claim_token, claim_kind, expires_at)
     SELECT $1, $2 || i, 't', 'done', gen_random_uuid(), 'claimed', ${expiresAt} FROM generate_series(1, $3::int) i`,
    [source, prefix, n],
  );
}

export async function countKeys(source: string): Promise<number> {
  const [{ n }] = await sql<{ n: number }>("SELECT count(*) AS n FROM dedup_keys WHERE source = $1", [source]);
  return n;
}
