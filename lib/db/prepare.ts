/**
 * Getting the database ready for work, the one way `keyward start` and every CLI command do it: open it
 * (DATABASE_URL, or the embedded one), apply pending migrations (where KEYWARD_MIGRATE_DATABASE_URL
 * says), and, when asked, check the session settings a pooler may have dropped and run the schema's
 * upkeep (audit months ahead, the KEYWARD_DEDUP_MODE switch, audit months past retention).
 *
 * Each step is reported through `report` as it completes, so each caller words its own output (the
 * server's log lines, `keyward migrate`'s summary) and a failure comes after what did happen. On a
 * failure the database is released before the error is rethrown. (The one lib/db module that calls
 * domain code: the upkeep belongs to lib/audit and lib/retention, the order of start-up here.)
 */
import { dropExpiredAuditPartitions, ensureAuditPartitions } from "@/lib/audit/partitions";
import { applyDedupModeSetting } from "@/lib/retention/partitions";
import { closeDb } from "./client";
import type { DatabaseHandle } from "./embedded";
import { migrate } from "./migrate";
import { migrationTarget, openDatabase } from "./open";
import { checkDatabaseSession } from "./session-check";

export type PrepareStep =
  | { step: "opened"; database: DatabaseHandle; target: { url: string; description: string } }
  | { step: "migrated"; applied: string[] }
  /** Only with checkSession. */
  | { step: "session_checked"; warnings: string[] }
  | { step: "audit_partitions_created"; created: number }
  /** What applying KEYWARD_DEDUP_MODE did, or null when nothing was to do. */
  | { step: "dedup_mode"; message: string | null }
  | { step: "audit_months_dropped"; months: string[] };

export type PrepareOptions = {
  /** Check the pool's session settings against the server's (`keyward start`). */
  checkSession?: boolean;
  /** Run the schema's upkeep after migrating (`keyward start`, `keyward migrate`). */
  upkeep?: boolean;
  report?: (step: PrepareStep) => void;
};

/** Opens, migrates and (optionally) maintains the database; the caller closes the handle when done. */
export async function prepareDatabase(options: PrepareOptions = {}): Promise<DatabaseHandle> {
  const report = options.report ?? (() => {});
  const database = await openDatabase();
  try {
    const target = migrationTarget(database);
    report({ step: "opened", database, target });
    report({ step: "migrated", applied: await migrate(target.url) });
    if (options.checkSession) {
      report({ step: "session_checked", warnings: await checkDatabaseSession({ migratedElsewhere: target.url !== database.url }) });
    }
    if (options.upkeep) {
      report({ step: "audit_partitions_created", created: await ensureAuditPartitions() });
      report({ step: "dedup_mode", message: await applyDedupModeSetting() });
      report({ step: "audit_months_dropped", months: await dropExpiredAuditPartitions() });
    }
    return database;
  } catch (err) {
    await closeDb();
    await database.close();
    throw err;
  }
}

/** Runs `work` against the prepared database (migrations applied), then releases it. */
export async function withPreparedDatabase<T>(work: () => Promise<T>, options: PrepareOptions = {}): Promise<T> {
  const database = await prepareDatabase(options);
  try {
    return await work();
  } finally {
    await closeDb();
    await database.close();
  }
}
