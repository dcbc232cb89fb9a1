/**
 * Migration 20261204060000_dead_letter_bytes: dead letters stored before it (payload as `json` text)
 * keep exactly that text, now as UTF-8 bytes, with content type application/json, so a replay after the
 * upgrade sends what a replay before it would have sent.
 */
import { randomBytes } from "node:crypto";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { expect, inject, it } from "vitest";
import { migrate, MIGRATIONS_DIR } from "@/lib/db/migrate";

const MIGRATION = "20261204060000_dead_letter_bytes";

it("converts existing payloads to their stored text's UTF-8 bytes", async () => {
  const server = inject("serverUrl");
  const name = `keyward_dlbytes_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const u = new URL(server);
  u.pathname = `/${name}`;
  const before = await mkdtemp(path.join(os.tmpdir(), "keyward-before-"));
  const client = new pg.Client({ connectionString: u.toString() });
  try {
    // Every migration before this one, then a row as the old intake wrote it.
    for (const e of await readdir(MIGRATIONS_DIR, { withFileTypes: true })) {
      if (e.isDirectory() && e.name < MIGRATION) await cp(path.join(MIGRATIONS_DIR, e.name), path.join(before, e.name), { recursive: true });
      if (e.isFile()) await cp(path.join(MIGRATIONS_DIR, e.name), path.join(before, e.name));
    }
    await migrate(u.toString(), before);
    await client.connect();
    await client.query(
      "INSERT INTO sources (name, retry_window_seconds, queue_lag_seconds, clock_skew_seconds, replay_seconds, ttl_seconds) VALUES ('old', 86400, 0, 0, 0, 86400)",
    );
    const text = '{"id":820982911946154500,"name":"Zoë 東京 🎉","nested":{"a":[1,2]}}';
    await client.query(
      "INSERT INTO dead_letters (source, event_id, event_type, payload, payload_bytes, error, failed_at) VALUES ('old', 'e1', 't', $1::json, $2, 'x', now())",
      [text, Buffer.byteLength(text)],
    );
    expect(await migrate(u.toString())).toContain(MIGRATION);
    const { rows } = await client.query<{ payload: Buffer; content_type: string }>("SELECT payload, content_type FROM dead_letters WHERE event_id = 'e1'");
    expect(rows[0].payload.equals(Buffer.from(text, "utf8"))).toBe(true);
    expect(rows[0].content_type).toBe("application/json");
  } finally {
    await client.end().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
    await rm(before, { recursive: true, force: true });
  }
});
