/** Helpers for tests: the file's database URL, unique names, raw SQL, and a source with a chosen TTL. */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { z } from "zod";
import { query, type PreparedSql } from "@/lib/db/sql";
import type { Db } from "@/lib/db/transaction";
import { prisma } from "@/lib/db/client";

// Many files keep expired-but-not-yet-pruned keys on purpose: no server a test starts prunes on a schedule
// unless its test asks for it.
process.env.KEYWARD_PRUNE_INTERVAL_SECONDS = "0";
// Nor may a server run the replay executor unless its test asks for it (KEYWARD_REPLAY_WORKER=1 in its env).
process.env.KEYWARD_REPLAY_WORKER = "0";
// Nor consume RabbitMQ inlets another test file made (the inlet tests run their own consumers).
process.env.KEYWARD_INLET_CONSUMER = "off";
// Nor the late-duplicate job (it reads the whole shared audit history); its tests run it themselves.
process.env.KEYWARD_LATE_DUPLICATES_INTERVAL_SECONDS = "0";

/** The URL of this test file's own database (setup-file.ts), whatever DATABASE_URL says at the moment. */
export function fileDatabaseUrl(): string {
  const url = process.env.KEYWARD_TEST_FILE_DATABASE_URL;
  if (!url) throw new Error("no DATABASE_URL: a test of the unit tier cannot use the database");
  return url;
}

export const uniq = (prefix = "t") => `${prefix}-${randomBytes(4).toString("hex")}`;

/**
 * A test's own look at the database: rows of the type the test states, not checked (the test's assertions
 * are the check). lib/ declares each row with a schema instead (lib/db/sql.ts query).
 */
export const sql = <Row extends object>(text: string | PreparedSql, values: unknown[] = [], db?: Db): Promise<Row[]> =>
  query(z.custom<Row>(), text, values, db);

/**
 * Waits until the database clock is past `at`. For a time kept where a test cannot move it (the audit
 * history is append-only); an expiry kept only in a mutable row is set by SQL instead
 * (`UPDATE … SET expires_at = now() - interval '1 second'`).
 */
export async function untilDatabaseClockPasses(at: string | Date, timeoutMs = 10_000): Promise<void> {
  const past = async () => (await query(z.object({ past: z.boolean() }), "SELECT $1::timestamptz < now() AS past", [at]))[0].past;
  await expect.poll(past, { timeout: timeoutMs, interval: 50 }).toBe(true);
}

/** Creates a source whose TTL is `ttlSeconds` (all of it in the retry window part). */
export async function makeSource(ttlSeconds = 7 * 86400, name = uniq("src")): Promise<string> {
  await prisma().source.create({
    data: { name, retryWindowSeconds: ttlSeconds, queueLagSeconds: 0, clockSkewSeconds: 0, replaySeconds: 0, ttlSeconds },
  });
  return name;
}
