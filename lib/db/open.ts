/** Chooses the database: DATABASE_URL if set, otherwise the embedded one under KEYWARD_DATA_DIR. */
import "server-only";
import { ConfigError, dataDir, loadEnv } from "@/lib/config/env";
import { openEmbedded, type DatabaseHandle } from "./embedded";

export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return `PostgreSQL at ${u.host}${u.pathname} (DATABASE_URL)`;
  } catch {
    return "PostgreSQL (DATABASE_URL)";
  }
}

/**
 * Opens the database this process should use and points process.env.DATABASE_URL at it, so every
 * module (Prisma, the raw-SQL helper, Next's route handlers) connects the same way. The embedded
 * database is a PostgreSQL server like any other: nothing below depends on which one it is.
 */
export async function openDatabase(): Promise<DatabaseHandle> {
  const env = loadEnv();
  if (env.KEYWARD_MIGRATE_DATABASE_URL && !env.DATABASE_URL) {
    throw new ConfigError("KEYWARD_MIGRATE_DATABASE_URL is set but DATABASE_URL is not: the embedded database migrates itself; unset it");
  }
  const handle: DatabaseHandle = env.DATABASE_URL
    ? { url: env.DATABASE_URL, description: describeUrl(env.DATABASE_URL), close: async () => {} }
    : await openEmbedded(dataDir(env), { port: env.KEYWARD_EMBEDDED_PORT });
  process.env.DATABASE_URL = handle.url;
  return handle;
}

/**
 * Where this process applies migrations: KEYWARD_MIGRATE_DATABASE_URL when set, else the database itself.
 * Behind a transaction-pooling PgBouncer the migrations must reach PostgreSQL directly: Prisma's migrator
 * holds a session-level advisory lock, which through the pooler would stay behind on a pooled server
 * session and make the next migration (every `keyward start`) wait on it forever.
 */
export function migrationTarget(database: DatabaseHandle): { url: string; description: string } {
  const env = loadEnv();
  if (!env.KEYWARD_MIGRATE_DATABASE_URL) return { url: database.url, description: database.description };
  return {
    url: env.KEYWARD_MIGRATE_DATABASE_URL,
    description: describeUrl(env.KEYWARD_MIGRATE_DATABASE_URL).replace("(DATABASE_URL)", "(KEYWARD_MIGRATE_DATABASE_URL)"),
  };
}
