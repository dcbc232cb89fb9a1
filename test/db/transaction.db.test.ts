/**
 * The one data path (lib/db/transaction.ts): a domain function runs alone or inside a caller's
 * transaction through the same Db handle; a rolled-back transaction leaves nothing; withTransaction runs
 * a function again when it loses a real serialization race, a bounded number of times.
 */
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { recordAction } from "@/lib/audit/actions";
import { cliPrincipal } from "@/lib/auth/principal";
import { database, isSerializationFailure, withTransaction, type Db } from "@/lib/db/transaction";
import { execute, query } from "@/lib/db/sql";
import { parseInput } from "@/lib/http/validate";
import { createSourceRequest } from "@/lib/sources/schema";
import { createSource, getSource, updateSource } from "@/lib/sources/sources";
import { makeSource, sql, uniq } from "@/test/setup/db";

const ACTOR = cliPrincipal();
const newSource = (name: string) => parseInput(createSourceRequest, { name, preset: "stripe" });

const createActions = async (name: string) =>
  (
    await sql<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_events WHERE kind = 'operator' AND detail->>'action' = 'source.create' AND source = $1",
      [name],
    )
  )[0].n;

class Rollback extends Error {}

describe("one function, alone or inside a transaction", () => {
  it("alone: commits the source and its action record", async () => {
    const name = uniq("tx-alone");
    const s = await createSource(newSource(name), ACTOR);
    expect(s.ttlSeconds).toBe(7 * 86400);
    expect((await getSource(name)).name).toBe(name);
    expect(await createActions(name)).toBe(1);
  });

  it("inside a caller's transaction: seen inside, invisible outside until commit, gone with a rollback", async () => {
    const name = uniq("tx-inside");
    const err = await withTransaction(async (tx) => {
      await createSource(newSource(name), ACTOR, tx);
      // The same read function on the transaction's handle sees the row; on the pool it does not yet.
      expect((await getSource(name, tx)).name).toBe(name);
      await expect(getSource(name)).rejects.toMatchObject({ status: 404 });
      // A second domain function joins the same transaction (its FOR UPDATE runs on the same connection).
      await updateSource(name, { replaySeconds: 86400 }, ACTOR, tx);
      throw new Rollback();
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Rollback);
    await expect(getSource(name)).rejects.toMatchObject({ status: 404 });
    expect(await createActions(name)).toBe(0); // the action record rolled back with the change
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE source = $1", [name]);
    expect(n).toBe(0);
  });

  it("inside a caller's transaction that commits: both functions' writes are there", async () => {
    const name = uniq("tx-commit");
    await withTransaction(async (tx) => {
      await createSource(newSource(name), ACTOR, tx);
      await updateSource(name, { replaySeconds: 86400 }, ACTOR, tx);
    });
    expect((await getSource(name)).replaySeconds).toBe(86400);
    const rows = await sql<{ action: string }>(
      "SELECT detail->>'action' AS action FROM audit_events WHERE kind = 'operator' AND source = $1 ORDER BY id",
      [name],
    );
    expect(rows.map((r) => r.action)).toEqual(["source.create", "source.update"]);
  });

  it("a nested withTransaction given the handle joins it: the outer rollback undoes the inner work", async () => {
    const actor = `cli:${uniq("nested")}`;
    await withTransaction(async (tx) => {
      await withTransaction((inner) => recordAction(actor, { action: "test.nested" }, inner), { db: tx });
      throw new Rollback();
    }).catch(() => {});
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE actor = $1", [actor]);
    expect(n).toBe(0);
  });

  it("hand-written SQL answers alike on the pool and in a transaction (int8 as a number, bytea as a Buffer)", async () => {
    const statement = "SELECT count(*) AS n, '\\x0102'::bytea AS b, 'x'::text AS t";
    const alone = await query(z.object({ n: z.number(), b: z.instanceof(Buffer), t: z.string() }), statement, [], database());
    const inside = await withTransaction((tx) => query(z.object({ n: z.number(), b: z.instanceof(Buffer), t: z.string() }), statement, [], tx));
    expect(inside).toEqual(alone);
    expect(typeof inside[0].n).toBe("number");
    expect(Buffer.isBuffer(inside[0].b)).toBe(true);
  });
});

describe("withTransaction({ retrySerialization })", () => {
  /**
   * Makes the transaction lose a real race: it reads the row (REPEATABLE READ takes its snapshot), another
   * connection updates and commits the row, then the transaction updates it too → 40001.
   */
  async function contend(tx: Db, source: string): Promise<void> {
    await query(z.object({ updated_at: z.date() }), "SELECT updated_at FROM sources WHERE name = $1", [source], tx);
    await execute("UPDATE sources SET updated_at = now() WHERE name = $1", [source], database());
    await execute("UPDATE sources SET updated_at = now() WHERE name = $1", [source], tx);
  }

  it("runs the function again after a serialization failure, and commits the attempt that wins", async () => {
    const source = await makeSource();
    const actor = `cli:${uniq("retry")}`;
    let attempts = 0;
    const result = await withTransaction(
      async (tx) => {
        attempts++;
        await recordAction(actor, { action: "test.retry", after: { attempt: attempts } }, tx);
        if (attempts === 1) await contend(tx, source);
        return attempts;
      },
      { retrySerialization: true, isolationLevel: "RepeatableRead" },
    );
    expect(result).toBe(2);
    // Only the winning attempt's record is there: the first rolled back with its failure.
    const rows = await sql<{ attempt: string }>("SELECT detail->'after'->>'attempt' AS attempt FROM audit_events WHERE actor = $1", [actor]);
    expect(rows).toEqual([{ attempt: "2" }]);
  });

  it("is bounded: a race lost every time fails after 3 attempts with the serialization failure", async () => {
    const source = await makeSource();
    let attempts = 0;
    const err = await withTransaction(
      async (tx) => {
        attempts++;
        await contend(tx, source);
      },
      { retrySerialization: true, isolationLevel: "RepeatableRead" },
    ).catch((e: unknown) => e);
    expect(attempts).toBe(3);
    expect(isSerializationFailure(err)).toBe(true);
  });

  it("without retrySerialization, one attempt; a number sets the bound", async () => {
    const source = await makeSource();
    let once = 0;
    await withTransaction(async (tx) => void (once++, await contend(tx, source)), { isolationLevel: "RepeatableRead" }).catch(() => {});
    expect(once).toBe(1);
    let twice = 0;
    await withTransaction(async (tx) => void (twice++, await contend(tx, source)), { retrySerialization: 2, isolationLevel: "RepeatableRead" }).catch(
      () => {},
    );
    expect(twice).toBe(2);
  });

  it("does not retry other errors", async () => {
    let attempts = 0;
    const err = await withTransaction(
      async () => {
        attempts++;
        throw new Error("not a race");
      },
      { retrySerialization: true },
    ).catch((e: unknown) => e);
    expect(attempts).toBe(1);
    expect((err as Error).message).toBe("not a race");
  });
});

describe("isSerializationFailure", () => {
  it("recognises a lost race however it arrives, and nothing else", () => {
    expect(isSerializationFailure({ code: "40001" })).toBe(true);
    expect(isSerializationFailure({ code: "40P01" })).toBe(true);
    expect(isSerializationFailure({ code: "P2034" })).toBe(true);
    expect(isSerializationFailure({ code: "P2010", meta: { driverAdapterError: { cause: { originalCode: "40001", kind: "TransactionWriteConflict" } } } })).toBe(true);
    expect(isSerializationFailure(new Error("wrapped", { cause: { code: "40P01" } }))).toBe(true);
    expect(isSerializationFailure({ code: "23505" })).toBe(false);
    expect(isSerializationFailure(new Error("boom"))).toBe(false);
    expect(isSerializationFailure(null)).toBe(false);
  });
});
