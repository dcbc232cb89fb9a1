/**
 * The Citus design (docs/scaling.md, "Past one PostgreSQL: Citus"; deploy/citus/) checked against the real
 * schema, read from pg_catalog in a database of this file's own (all migrations applied): every table has a
 * place in the design (a new table must be given one); each distributed table has its distribution column,
 * NOT NULL; once deploy/citus/prepare.sql has run, every unique key of a distributed table (the dedup table in
 * either mode, the audit history, the counters) includes the distribution column; no foreign key points at a
 * distributed table or leaves one for a table that is not a reference table; and deploy/citus/distribute.sql
 * names exactly the design's distributed and reference tables, with the same columns.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { recordAction } from "@/lib/audit/actions";
import { execute } from "@/lib/db/sql";
import { sql } from "@/test/setup/db";
import { ROOT } from "@/test/setup/server";


/** The design: each table's place. Distributed tables are co-located by `source`. */
const DISTRIBUTED: Record<string, string> = {
  dedup_keys: "source",
  audit_events: "source",
  late_duplicates: "source",
  duplicate_ages: "source",
  claim_counts: "source",
};
const REFERENCE = ["sources", "api_keys", "settings"];
const LOCAL = [
  "_prisma_migrations",
  "auth_users",
  "auth_accounts",
  "auth_sessions",
  "auth_verifications",
  "sign_in_throttle",
  "dead_letters",
  "payload_uploads",
  "inlets",
  "replays",
  "replay_items",
  "replay_attempts",
  "replay_preflights",
  "replay_preflight_items",
  "job_leases",
  "prune_runs",
  "metric_samples",
  "notification_conditions",
  "notification_deliveries",
  "late_duplicate_cursors",
];

const citus = (file: string) => readFileSync(path.join(ROOT, "deploy", "citus", file), "utf8");

/** Tables of the public schema that are not partitions of another. */
async function tables(): Promise<string[]> {
  const rows = await sql<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c
     WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

/** Every unique index (primary keys, unique constraints, unique indexes) of a table, with its columns. */
async function uniqueKeys(table: string): Promise<{ index: string; columns: string[] }[]> {
  const rows = await sql<{ index: string; columns: string[] }>(
    `SELECT i.relname AS index,
            array(SELECT a.attname::text FROM unnest(ix.indkey) WITH ORDINALITY k(attnum, n)
                  JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum ORDER BY k.n) AS columns
     FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid
     WHERE ix.indrelid = $1::regclass AND ix.indisunique ORDER BY 1`,
    [table],
  );
  return rows;
}

async function violations(): Promise<string[]> {
  const out: string[] = [];
  for (const [table, column] of Object.entries(DISTRIBUTED)) {
    for (const k of await uniqueKeys(table)) if (!k.columns.includes(column)) out.push(`${table}: ${k.index} (${k.columns.join(", ")})`);
    // An expression index has attnum 0 and no column name: it cannot include the column either.
  }
  return out;
}

/** Distribution columns that may hold NULL (Citus refuses NULL there). */
async function nullable(): Promise<string[]> {
  const out: string[] = [];
  for (const [table, column] of Object.entries(DISTRIBUTED)) {
    const [col] = await sql<{ notnull: boolean }>(
      "SELECT attnotnull AS notnull FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped",
      [table, column],
    );
    if (!col) throw new Error(`${table} has no column ${column}`);
    if (!col.notnull) out.push(`${table}.${column}`);
  }
  return out;
}

describe("the Citus design against the real schema", () => {
  it("gives every table a place", async () => {
    const designed = [...Object.keys(DISTRIBUTED), ...REFERENCE, ...LOCAL].sort();
    expect(await tables()).toEqual(designed);
  });

  it("once prepare.sql has run, every distributed table's column is NOT NULL and every unique key includes it (only the audit history needed changes)", async () => {
    // Operator actions without a source sit in the audit history: kept through the conversion, as ''.
    await recordAction("citus-test", { action: "api_key.revoke", target: { type: "api_key", id: "citus-test" } });
    expect(await nullable()).toEqual(["audit_events.source"]);
    expect(await violations()).toEqual(["audit_events: audit_events_pkey (at, id)"]);
    await execute(citus("prepare.sql")); // several statements: sent as one simple query
    expect(await nullable()).toEqual([]);
    expect(await violations()).toEqual([]);
    expect((await sql<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE actor = 'citus-test' AND source = ''"))[0].n).toBe(1);
    const audit = await uniqueKeys("audit_events");
    expect(audit).toEqual([{ index: "audit_events_pkey", columns: ["source", "at", "id"] }]);
    // Each month's partition carries the new key too.
    const [{ n }] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_inherits i JOIN pg_index ix ON ix.indrelid = i.inhrelid AND ix.indisprimary
       WHERE i.inhparent = 'audit_events'::regclass
         AND (SELECT array_agg(a.attname::text ORDER BY k.n) FROM unnest(ix.indkey) WITH ORDINALITY k(attnum, n)
              JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum) <> ARRAY['source', 'at', 'id']`,
    );
    expect(n).toBe(0);
    // Partition mode's dedup table keeps the rule: its key is (source, event_id, expires_at).
    await sql("SELECT keyward_partitions_enable(3)");
    expect(await violations()).toEqual([]);
    expect((await uniqueKeys("dedup_keys")).map((k) => k.columns)).toEqual([["source", "event_id", "expires_at"]]);
  });

  it("no foreign key points at a distributed table, and none leaves one except to a reference table", async () => {
    const fks = await sql<{ from: string; to: string }>(
      `SELECT conrelid::regclass::text AS from, confrelid::regclass::text AS to FROM pg_constraint
       WHERE contype = 'f' AND connamespace = 'public'::regnamespace
         AND conrelid IN (SELECT oid FROM pg_class WHERE NOT relispartition)`,
    );
    expect(fks.length).toBeGreaterThan(0);
    for (const fk of fks) {
      expect(Object.keys(DISTRIBUTED), `${fk.from} → ${fk.to}`).not.toContain(fk.to);
      if (fk.from in DISTRIBUTED) expect(REFERENCE, `${fk.from} → ${fk.to}`).toContain(fk.to);
      // A reference table is copied to every node: it may only point at another reference table.
      if (REFERENCE.includes(fk.from)) expect(REFERENCE, `${fk.from} → ${fk.to}`).toContain(fk.to);
    }
  });

  it("distribute.sql distributes exactly the design's tables by their columns, co-located, and makes its reference tables", () => {
    const text = citus("distribute.sql");
    const distributed = Object.fromEntries(
      [...text.matchAll(/create_distributed_table\('(\w+)', '(\w+)'(, colocate_with => '(\w+)')?\)/g)].map((m) => [m[1], m[2]]),
    );
    expect(distributed).toEqual(DISTRIBUTED);
    const colocated = [...text.matchAll(/create_distributed_table\('(\w+)', '\w+', colocate_with => '(\w+)'\)/g)].map((m) => m[2]);
    expect(colocated).toEqual(Object.keys(DISTRIBUTED).slice(1).map(() => "dedup_keys"));
    expect([...text.matchAll(/create_reference_table\('(\w+)'\)/g)].map((m) => m[1]).sort()).toEqual([...REFERENCE].sort());
  });
});
