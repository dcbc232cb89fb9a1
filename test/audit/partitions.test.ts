/** The audit history's monthly partitions: created ahead, and a month's rows leave the DEFAULT partition. */
import { describe, expect, it } from "vitest";
import { ensureAuditPartitions } from "../../lib/audit/partitions";
import { sql, uniq } from "../setup/db";

const partitionOf = async (eventId: string) =>
  (await sql<{ part: string }>("SELECT tableoid::regclass::text AS part FROM audit_events WHERE event_id = $1", [eventId]))[0]?.part;

describe("ensureAuditPartitions", () => {
  it("has this month and the next three as partitions after migrating", async () => {
    const rows = await sql<{ name: string }>(
      `SELECT format('audit_events_%s', to_char(date_trunc('month', now()) + make_interval(months => i), 'YYYY_MM')) AS name
       FROM generate_series(0, 3) AS i
       WHERE to_regclass(format('audit_events_%s', to_char(date_trunc('month', now()) + make_interval(months => i), 'YYYY_MM'))) IS NULL`,
    );
    expect(rows).toEqual([]);
    expect(await ensureAuditPartitions()).toBe(0); // idempotent
  });

  it("moves a far-future month's rows out of the DEFAULT partition when it creates that month", async () => {
    const eventId = uniq("far");
    await sql(
      `INSERT INTO audit_events (at, source, event_id, event_type, kind)
       VALUES (date_trunc('month', now()) + interval '8 months' + interval '3 days', 'partitions-test', $1, 't', 'claimed')`,
      [eventId],
    );
    expect(await partitionOf(eventId)).toBe("audit_events_default");
    expect(await ensureAuditPartitions(9)).toBeGreaterThanOrEqual(1);
    const [expected] = await sql<{ name: string }>(
      "SELECT format('audit_events_%s', to_char(date_trunc('month', now()) + interval '8 months', 'YYYY_MM')) AS name",
    );
    expect(await partitionOf(eventId)).toBe(expected.name);
    const [left] = await sql<{ n: number }>("SELECT count(*) AS n FROM audit_events_default WHERE event_id = $1", [eventId]);
    expect(left.n).toBe(0);
  });
});

describe("the audit history is append-only", () => {
  it("refuses UPDATE and DELETE on every partition, default included", async () => {
    const eventId = uniq("ao");
    await sql("INSERT INTO audit_events (source, event_id, event_type, kind) VALUES ('append-only', $1, 't', 'claimed')", [eventId]);
    await sql(
      "INSERT INTO audit_events (at, source, event_id, event_type, kind) VALUES ('2001-01-01', 'append-only', $1, 't', 'claimed')",
      [eventId],
    );
    for (const statement of [
      "UPDATE audit_events SET kind = 'released' WHERE event_id = $1",
      "DELETE FROM audit_events WHERE event_id = $1",
      "DELETE FROM audit_events_default WHERE event_id = $1",
    ]) {
      await expect(sql(statement, [eventId])).rejects.toThrow(/audit_events is append-only/);
    }
    const [n] = await sql<{ n: number }>("SELECT count(*) AS n FROM audit_events WHERE event_id = $1 AND kind = 'claimed'", [eventId]);
    expect(n.n).toBe(2);
  });
});
