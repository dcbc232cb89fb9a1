/**
 * KEYWARD_DB_PREPARED_STATEMENTS: `on` (the default) leaves the hot statements
 * prepared on the connection that ran them; `off` sends them unnamed, so the server keeps nothing for the
 * connection (what a transaction-mode pooler needs). A
 * value other than on/off stops start-up naming the variable.
 */
import { z } from "zod";
import { connectionDb } from "@/lib/db/transaction";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadEnv } from "@/lib/config/env";
import { pool } from "@/lib/db/client";
import { forgetNamedStatementsSetting, namedStatements, query, type PreparedSql } from "@/lib/db/sql";
import { CLAIM_SQL } from "@/lib/claims/claim";
import { ClaimRow } from "@/lib/claims/classify";

const ORIGINAL = process.env.KEYWARD_DB_PREPARED_STATEMENTS;

afterEach(() => {
  if (ORIGINAL === undefined) delete process.env.KEYWARD_DB_PREPARED_STATEMENTS;
  else process.env.KEYWARD_DB_PREPARED_STATEMENTS = ORIGINAL;
  forgetNamedStatementsSetting();
});

/** Runs `statement` on one pool connection and lists the named statements that connection then holds. */
async function preparedAfter(statement: PreparedSql): Promise<string[]> {
  const client = await pool().connect();
  try {
    const [{ n }] = await query(z.object({ n: z.number() }), statement, [41], connectionDb(client));
    expect(n).toBe(42);
    const rows = await query(z.object({ name: z.string() }), "SELECT name FROM pg_prepared_statements ORDER BY name", [], connectionDb(client));
    return rows.map((r) => r.name);
  } finally {
    client.release(true); // a fresh connection for the next case
  }
}

const PROBE: PreparedSql = { name: "keyward_test_probe", text: "SELECT $1::int + 1 AS n" };

describe("KEYWARD_DB_PREPARED_STATEMENTS", () => {
  it("defaults to on: a PreparedSql stays prepared under its name on its connection", async () => {
    delete process.env.KEYWARD_DB_PREPARED_STATEMENTS;
    forgetNamedStatementsSetting();
    expect(loadEnv().KEYWARD_DB_PREPARED_STATEMENTS).toBe("on");
    expect(namedStatements()).toBe(true);
    expect(await preparedAfter(PROBE)).toContain("keyward_test_probe");
  });

  it("off: the same statement runs unnamed and leaves nothing prepared on the connection", async () => {
    process.env.KEYWARD_DB_PREPARED_STATEMENTS = "off";
    forgetNamedStatementsSetting();
    expect(namedStatements()).toBe(false);
    expect(await preparedAfter(PROBE)).toEqual([]);
  });

  it("off: a statement the product prepares (the claim) is unnamed too", async () => {
    process.env.KEYWARD_DB_PREPARED_STATEMENTS = "off";
    forgetNamedStatementsSetting();
    const client = await pool().connect();
    try {
      // A claim for a source that does not exist inserts nothing and answers no row; it still goes through run().
      const claimed = await query(ClaimRow, CLAIM_SQL, ["no-such-source", ["evt"], [null], [null], [0], null, "test", [null]], connectionDb(client));
      expect(claimed).toEqual([]);
      const rows = await query(z.object({ name: z.string() }), "SELECT name FROM pg_prepared_statements", [], connectionDb(client));
      expect(rows).toEqual([]);
    } finally {
      client.release(true);
    }
  });

  it("refuses anything but on/off, naming the variable", () => {
    expect(() => loadEnv({ ...process.env, KEYWARD_DB_PREPARED_STATEMENTS: "maybe" })).toThrow(ConfigError);
    expect(() => loadEnv({ ...process.env, KEYWARD_DB_PREPARED_STATEMENTS: "maybe" })).toThrow(/KEYWARD_DB_PREPARED_STATEMENTS: must be "on" or "off"/);
    expect(loadEnv({ ...process.env, KEYWARD_DB_PREPARED_STATEMENTS: "off" }).KEYWARD_DB_PREPARED_STATEMENTS).toBe("off");
  });
});
