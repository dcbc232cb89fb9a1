/**
 * query() holds each row to the schema its statement declares (lib/db/sql.ts; docs/architecture.md, "Data
 * access: the convention"): a wrong declaration fails loudly, naming the statement and the field, wherever
 * shape checks are on (outside production, or KEYWARD_CHECK_RESPONSES=1); in production only the type holds.
 */
import { z } from "zod";
import { afterEach, describe, expect, it, vi } from "vitest";
import { query, type PreparedSql } from "@/lib/db/sql";
import { ClaimRow } from "@/lib/claims/classify";
import "@/test/setup/db";

const ROW_SQL = "SELECT 7::int AS n, 'x'::text AS t, now() AS at, '\\x00ff'::bytea AS b, 9::int8 AS big, 1.5::numeric AS dec";

describe("query(Row, …)", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("answers the rows when they are what the schema declares, pg's types as pg sends them", async () => {
    const Row = z.object({ n: z.number(), t: z.string(), at: z.date(), b: z.instanceof(Buffer), big: z.number(), dec: z.string() });
    const [row] = await query(Row, ROW_SQL);
    expect(row).toMatchObject({ n: 7, t: "x", big: 9, dec: "1.5" });
    expect(row.b.equals(Buffer.from([0, 255]))).toBe(true);
  });

  it("refuses a row that does not match, naming the statement and the field", async () => {
    const Wrong = z.object({ n: z.string() });
    await expect(query(Wrong, "SELECT 7::int AS n")).rejects.toThrow(/statement "SELECT 7::int AS n" does not match its declaration: field n: /);
    const prepared: PreparedSql = { name: "keyward_test_row_schema", text: "SELECT NULL::timestamptz AS lease_expires_at" };
    await expect(query(z.object({ lease_expires_at: z.date() }), prepared)).rejects.toThrow(
      /statement "keyward_test_row_schema" does not match its declaration: field lease_expires_at: /,
    );
  });

  it("refuses a missing column", async () => {
    await expect(query(ClaimRow, "SELECT 'e' AS event_id")).rejects.toThrow(/field status: /);
  });

  it("in production, without KEYWARD_CHECK_RESPONSES=1, does not check (only the type holds)", async () => {
    vi.stubEnv("NODE_ENV", "production");
    vi.stubEnv("KEYWARD_CHECK_RESPONSES", "");
    const rows = await query(z.object({ n: z.string() }), "SELECT 7::int AS n");
    expect(rows).toEqual([{ n: 7 }]);
    vi.stubEnv("KEYWARD_CHECK_RESPONSES", "1");
    await expect(query(z.object({ n: z.string() }), "SELECT 7::int AS n")).rejects.toThrow(/field n: /);
  });
});
