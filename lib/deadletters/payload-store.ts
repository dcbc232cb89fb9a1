/**
 * Payloads of any size (up to KEYWARD_MAX_PAYLOAD_BYTES, 25 MiB by default) in and out of `dead_letters`
 * without a second copy in memory and without a statement carrying more than CHUNK_BYTES.
 *
 * In: a payload over INLINE_MAX_BYTES is written first as chunks (`stagePayload`: one INSERT of ≤ 1 MiB
 * each into payload_uploads, as a binary parameter: pg sends a Buffer as is), and the statement that
 * stores the letter (intake.ts INSERT_SQL) assembles them with string_agg and deletes them, so the letter
 * and its audit row still appear together, in one statement. A request that fails after staging leaves
 * chunks nobody references: `pruneAbandonedUploads` deletes them after an hour (the dead-letter pruning).
 * Putting the whole payload in one bytea[] parameter instead would cost its hex text (2×) and pg's
 * message buffers (another 2–3×): bench/payload-memory.ts measures both.
 *
 * Out: `readPayload` fills one Buffer of the payload's size chunk by chunk (`substring`), and
 * `payloadChunks` yields the chunks one at a time for a download, so memory stays at one copy (or one
 * chunk). Only those two read a payload larger than INLINE_MAX_BYTES.
 */
import "server-only";
import { z } from "zod";
import { randomUUID } from "node:crypto";
import { pool } from "@/lib/db/client";
import { query, execute, isUnavailable, toUnavailable } from "@/lib/db/sql";
import { loadEnv } from "@/lib/config/env";
import { database, type Db } from "@/lib/db/transaction";

/** Payloads up to this size travel inline in the statements that write and read them. */
export const INLINE_MAX_BYTES = 1024 * 1024;
/** The size of a staged or read chunk. */
export const CHUNK_BYTES = 1024 * 1024;
/** Staged chunks older than this belong to a request that failed: pruned. */
export const ABANDONED_UPLOAD_SECONDS = 3600;

/** Writes `payload` as chunks of an upload; answers the upload id INSERT_SQL takes instead of the bytes. */
export async function stagePayload(payload: Buffer, db: Db = database()): Promise<string> {
  const uploadId = randomUUID();
  for (let seq = 0, at = 0; at < payload.length; seq++, at += CHUNK_BYTES) {
    // Raw SQL: a bytea chunk as a binary parameter (Prisma would copy it into its own representation).
    await execute("INSERT INTO payload_uploads (upload_id, seq, chunk) VALUES ($1::uuid, $2, $3)", [
      uploadId,
      seq,
      payload.subarray(at, Math.min(payload.length, at + CHUNK_BYTES)),
    ], db);
  }
  return uploadId;
}

/** Deletes the chunks of uploads no letter took within ABANDONED_UPLOAD_SECONDS; answers how many. */
export async function pruneAbandonedUploads(db: Db = database()): Promise<number> {
  return db.prisma.payloadUpload
    .deleteMany({ where: { createdAt: { lt: new Date(Date.now() - ABANDONED_UPLOAD_SECONDS * 1000) } } })
    .then((r) => r.count);
}

/** Raw SQL: one slice of a stored payload (substring of a bytea reads only what it needs of an uncompressed value). */
const SLICE_SQL = "SELECT substring(payload FROM $2::int FOR $3::int) AS chunk FROM dead_letters WHERE id = $1::uuid";

/**
 * The payload of letter `id` in one Buffer of its size, read CHUNK_BYTES at a time; null when the letter
 * no longer exists. `size` is its payload_bytes, when the caller has it already.
 */
export async function readPayload(id: string, size?: number, db: Db = database()): Promise<Buffer | null> {
  if (size === undefined) {
    const [row] = await query(z.object({ payload_bytes: z.number() }), "SELECT payload_bytes FROM dead_letters WHERE id = $1::uuid", [id], db);
    if (!row) return null;
    size = row.payload_bytes;
  }
  if (size <= INLINE_MAX_BYTES) {
    const [row] = await query(z.object({ payload: z.instanceof(Buffer) }), "SELECT payload FROM dead_letters WHERE id = $1::uuid", [id], db);
    return row ? row.payload : null;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for await (const chunk of payloadChunks(id, size, db)) {
    if (chunk === null) return null;
    chunk.copy(out, at);
    at += chunk.length;
  }
  return at === size ? out : null;
}

/** The payload of letter `id` (of `size` bytes) as chunks, each read when asked for; null: the letter is gone. */
export async function* payloadChunks(id: string, size: number, db: Db = database()): AsyncGenerator<Buffer | null> {
  for (let at = 0; at < size; at += CHUNK_BYTES) {
    const [row] = await query(z.object({ chunk: z.instanceof(Buffer) }), SLICE_SQL, [id, at + 1, Math.min(CHUNK_BYTES, size - at)], db);
    if (!row) {
      yield null;
      return;
    }
    yield row.chunk;
  }
}

/** Extra statement time a staged payload's letter may take to be written: per MiB assembled. */
export const ASSEMBLY_MS_PER_MIB = 1000;

/**
 * Runs the statement that stores letters whose payloads were staged (`stagedBytes` in all) with a
 * statement timeout of KEYWARD_DB_STATEMENT_TIMEOUT_MS + ASSEMBLY_MS_PER_MIB per MiB: assembling and writing
 * 25 MiB (its TOAST rows and WAL) can take longer than the timeout sized for ordinary statements on a busy
 * server. A connection of its own, the timeout set for this statement and reset after (a session setting,
 * not a transaction: the statement is one, atomic). A fault → 503, as everywhere.
 */
export async function runAssembly<Row extends object>(sql: string, values: unknown[], stagedBytes: number): Promise<Row[]> {
  const ms = loadEnv().KEYWARD_DB_STATEMENT_TIMEOUT_MS + Math.ceil(stagedBytes / (1024 * 1024)) * ASSEMBLY_MS_PER_MIB;
  let client;
  try {
    client = await pool().connect();
  } catch (err) {
    throw isUnavailable(err) ? toUnavailable(err) : err;
  }
  try {
    await client.query(`SET statement_timeout = ${ms}`);
    const res = await client.query({ text: sql, values, query_timeout: ms + 500 } as never);
    return (res as unknown as { rows: Row[] }).rows;
  } catch (err) {
    throw isUnavailable(err) ? toUnavailable(err) : err;
  } finally {
    await client.query("RESET statement_timeout").catch(() => {});
    client.release();
  }
}
