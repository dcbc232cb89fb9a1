/**
 * A transaction that outlives its timeout on a loaded machine is a database fault (503, retry later), not a
 * 500: Prisma rolls it back, so nothing it did was committed. Against the real PostgreSQL. (A release answered
 * 500 once in a CI run of the Redis fault matrix on a loaded machine; this is the likely cause.)
 */
import { describe, expect, it } from "vitest";
import { isUnavailable } from "@/lib/db/sql";
import { KeywardError } from "@/lib/errors";
import { withTransaction } from "@/lib/db/transaction";
import { query } from "@/lib/db/sql";
import { z } from "zod";

describe("an expired transaction", () => {
  it("(Prisma's P2028, a query or commit past the timeout) is answered as the database unavailable", async () => {
    const err = await withTransaction(
      async (tx) => {
        await query(z.object({ x: z.number() }), "SELECT 1 AS x FROM pg_sleep(0.6)", [], tx);
        return query(z.object({ v: z.string() }), "SELECT 'late'::text AS v", [], tx);
      },
      { timeout: 200 },
    ).then(
      () => null,
      (e: unknown) => e,
    );
    // The query past the timeout gets Prisma's P2028 ("… on an expired transaction"): the database layer
    // answers it as unavailable, which the routes turn into a 503.
    expect(err).toBeInstanceOf(KeywardError);
    expect([(err as KeywardError).status, (err as KeywardError).code]).toEqual([503, "database_unavailable"]);
    expect(isUnavailable({ code: "P2028", message: "Transaction API error: A commit cannot be executed on an expired transaction." })).toBe(true);
  });

  it("a transaction misused by code (not a timeout) is not", () => {
    expect(isUnavailable(new Error("Transaction not found. Transaction ID is invalid"))).toBe(false);
  });
});
