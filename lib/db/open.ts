/** Chooses the database: DATABASE_URL if set, otherwise the embedded one under KEYWARD_DATA_DIR. */
import { dataDir, loadEnv } from "../config/env";
import { openEmbedded, type DatabaseHandle } from "./embedded";
import { forgetNamedStatementsSetting } from "./sql";

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
 * module (Prisma, the raw-SQL helper, Next's route handlers) connects the same way.
 *
 * The embedded database serves every connection from one PostgreSQL session, where a named statement
 * of one pool connection collides with the same name prepared by another ("prepared statement … already
 * exists"): there KEYWARD_DB_PREPARED_STATEMENTS is forced off, whatever was set.
 */
export async function openDatabase(): Promise<DatabaseHandle> {
  const env = loadEnv();
  const handle: DatabaseHandle = env.DATABASE_URL
    ? { url: env.DATABASE_URL, description: describeUrl(env.DATABASE_URL), close: async () => {} }
    : await openEmbedded(dataDir(env), env.KEYWARD_EMBEDDED_PORT);
  process.env.DATABASE_URL = handle.url;
  if (!env.DATABASE_URL) process.env.KEYWARD_DB_PREPARED_STATEMENTS = "off";
  forgetNamedStatementsSetting();
  return handle;
}
