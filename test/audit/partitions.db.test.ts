/** The audit history's monthly partitions: created ahead, and a month's rows leave the DEFAULT partition. */
import { describe, expect, it } from "vitest";
import { ensureAuditPartitions } from "@/lib/audit/partitions";
import { sql, uniq } from "@/test/setup/db";

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

describe("dropExpiredAuditPartitions", () => {
  it("drops whole months past the retention (never below 90 days), keeps recent ones and DEFAULT, and logs each drop", async () => {
    const { dropExpiredAuditPartitions } = await import("@/lib/audit/partitions");
    await sql("DROP TABLE IF EXISTS audit_events_1987_03");
    await sql("CREATE TABLE audit_events_1987_03 PARTITION OF audit_events FOR VALUES FROM ('1987-03-01') TO ('1987-04-01')");
    await sql("INSERT INTO audit_events (at, kind, actor) VALUES ('1987-03-15', 'claimed', 'test')");

    // A retention below 90 days is raised to 90: this month and the ones ahead are never dropped.
    // (A test server starting meanwhile may drop it first: then it is not in our list, but still gone, once.)
    const dropped = await dropExpiredAuditPartitions(1);
    expect(dropped.every((n) => /^audit_events_\d{4}_\d{2}$/.test(n))).toBe(true);
    const left = await sql<{ relname: string }>(
      "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'audit_events'::regclass",
    );
    const names = left.map((r) => r.relname);
    expect(names).not.toContain("audit_events_1987_03");
    expect(names).toContain("audit_events_default");
    const thisMonth = await sql<{ name: string }>("SELECT 'audit_events_' || to_char(now(), 'YYYY_MM') AS name");
    expect(names).toContain(thisMonth[0].name);
    const [logged] = await sql<{ n: number }>(
      "SELECT count(*) AS n FROM audit_events WHERE kind = 'operator' AND actor = 'system' AND detail->'target'->>'id' = 'audit_events_1987_03'",
    );
    expect(logged.n).toBe(1);
  });
});
