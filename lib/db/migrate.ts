/**
 * Applies prisma/migrations to a PostgreSQL database exactly as `prisma migrate deploy` does (same
 * `_prisma_migrations` bookkeeping, checksums, and "a failed migration blocks later ones"), using
 * Prisma's schema engine compiled to WebAssembly over the pg driver adapter. The native engine that
 * `prisma migrate` downloads is not needed, so this works offline.
 */
import "server-only";
import { createHash } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import pg from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";

const ROOT = path.resolve(__dirname, "../..");
export const MIGRATIONS_DIR = path.join(ROOT, "prisma", "migrations");
const SCHEMA_PATH = path.join(ROOT, "prisma", "schema.prisma");

export class MigrationError extends Error {
  constructor(message: string, readonly cause?: unknown) {
    super(message);
    this.name = "MigrationError";
  }
}

type SchemaEngine = {
  applyMigrations(input: unknown): Promise<{ appliedMigrationNames: string[] }>;
  diagnoseMigrationHistory(input: unknown): Promise<{ failedMigrationNames: string[]; editedMigrationNames: string[] }>;
  free(): void;
};

let engineModule: Promise<{ SchemaEngine: { new: (...args: unknown[]) => Promise<SchemaEngine> } }> | undefined;

/** Loads the wasm engine by hand: importing the package fails on Node 20 (it imports the .wasm directly). */
function loadEngineModule() {
  engineModule ??= (async () => {
    const require = createRequire(__filename);
    const dir = path.dirname(require.resolve("@prisma/schema-engine-wasm"));
    const bg = await import(path.join(dir, "schema_engine_bg.js"));
    const bytes = await readFile(path.join(dir, "schema_engine_bg.wasm"));
    // The engine arms timers it never clears (its connection pool's idle timer); unref them so a
    // finished `keyward migrate` exits at once instead of lingering ~10 s.
    const imports: Record<string, unknown> = { ...bg };
    for (const name of Object.keys(bg).filter((n) => n.startsWith("__wbg_setTimeout"))) {
      imports[name] = (...args: unknown[]) => {
        const timer = bg[name](...args);
        timer?.unref?.();
        return timer;
      };
    }
    const { instance } = await WebAssembly.instantiate(bytes, { "./schema_engine_bg.js": imports as WebAssembly.ModuleImports });
    bg.__wbg_set_wasm(instance.exports);
    (instance.exports as { __wbindgen_start: () => void }).__wbindgen_start();
    return bg;
  })();
  return engineModule;
}

/**
 * PrismaPg.executeScript splits a script on ";" and runs the pieces one by one outside a transaction,
 * which breaks $$-quoted function bodies and leaves a failed migration half-applied. Sending the whole
 * script as one simple-protocol query makes PostgreSQL run it as one implicit transaction.
 */
function wholeScriptAdapter(pool: pg.Pool, onScriptError: (err: Error) => void): PrismaPg {
  const factory = new PrismaPg(pool);
  const connect = factory.connect.bind(factory);
  factory.connect = async () => {
    const adapter = await connect();
    adapter.executeScript = async (script: string) => {
      try {
        await pool.query(script);
      } catch (err) {
        onScriptError(err as Error); // the engine reports only "external connector error"
        throw err;
      }
    };
    return adapter;
  };
  return factory;
}

async function loadMigrationsList(baseDir: string) {
  const entries = (await readdir(baseDir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const migrationDirectories = await Promise.all(
    entries.map(async (dir) => ({
      path: dir,
      migrationFile: {
        path: "migration.sql",
        content: { tag: "ok", value: await readFile(path.join(baseDir, dir, "migration.sql"), "utf8") },
      },
    })),
  );
  const lockPath = path.join(baseDir, "migration_lock.toml");
  return {
    baseDir,
    lockfile: { path: "migration_lock.toml", content: await readFile(lockPath, "utf8").catch(() => null) },
    migrationDirectories,
    shadowDbInitScript: "",
  };
}

/**
 * True when the database records exactly the migrations of `list` as applied (finished, not rolled back,
 * the same checksum as `prisma migrate deploy` stores: sha256 of migration.sql). Then the engine would
 * apply nothing, and loading it (compiling a 5 MB wasm, most of a CLI command's start-up) is skipped.
 * Anything else (a pending, failed, edited or unknown migration, no _prisma_migrations yet, an error
 * reading it) goes to the engine, which decides and reports as before.
 */
async function isUpToDate(pool: pg.Pool, list: Awaited<ReturnType<typeof loadMigrationsList>>): Promise<boolean> {
  let rows: { migration_name: string; checksum: string; finished: boolean }[];
  try {
    ({ rows } = await pool.query(
      "SELECT migration_name, checksum, finished_at IS NOT NULL AS finished FROM _prisma_migrations WHERE rolled_back_at IS NULL",
    ));
  } catch {
    return false;
  }
  const expected = new Map(
    list.migrationDirectories.map((d) => [d.path, createHash("sha256").update(d.migrationFile.content.value).digest("hex")]),
  );
  return (
    rows.length === expected.size &&
    new Set(rows.map((r) => r.migration_name)).size === rows.length &&
    rows.every((r) => r.finished && expected.get(r.migration_name) === r.checksum)
  );
}

/**
 * Applies every pending migration; returns the names applied. Throws MigrationError with a clear
 * message. `migrationsDir` defaults to prisma/migrations (tests point it elsewhere).
 */
export async function migrate(databaseUrl: string, migrationsDir = MIGRATIONS_DIR): Promise<string[]> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const logs: string[] = [];
  let scriptError: Error | undefined;
  let engine: SchemaEngine | undefined;
  let turn: pg.Client | undefined;
  try {
    const migrationsList = await loadMigrationsList(migrationsDir);
    if (await isUpToDate(pool, migrationsList)) return [];
    // Two processes migrating at once (`npm start &` and a CLI command right after it) take turns: the
    // engine's own advisory lock covers applying, not its history check before it, which would report the
    // other process's migration in progress as "failed earlier". A transaction-level lock on a connection
    // of its own: it also holds, and ends, behind a transaction-mode pooler. One of the two documented BEGINs
    // outside withTransaction (docs/architecture.md, "Data access"): migrations run before the app's pool exists.
    turn = new pg.Client({ connectionString: databaseUrl });
    await turn.connect();
    await turn.query("BEGIN");
    await turn.query(`SET LOCAL lock_timeout = '${MIGRATION_TURN_WAIT_S}s'`);
    try {
      await turn.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_TURN_LOCK_KEY]);
    } catch (err) {
      if ((err as { code?: string }).code !== "55P03") throw err;
      throw new MigrationError(`another process has been migrating this database for ${MIGRATION_TURN_WAIT_S} s; wait for it, or stop it`);
    }
    if (await isUpToDate(pool, migrationsList)) return []; // the other process has just applied them
    const { SchemaEngine } = await loadEngineModule();
    const schemaText = await readFile(SCHEMA_PATH, "utf8");
    engine = await SchemaEngine.new(
      { datamodels: [[SCHEMA_PATH, schemaText]] },
      (log: string) => logs.push(log),
      bindMigrationAwareSqlAdapterFactory(wholeScriptAdapter(pool, (err) => (scriptError = err))),
    );
    const filters = { externalTables: [], externalEnums: [] };
    const diagnosis = await engine.diagnoseMigrationHistory({ migrationsList, optInToShadowDatabase: false, filters });
    if (diagnosis.failedMigrationNames.length > 0) {
      throw new MigrationError(
        `migration ${diagnosis.failedMigrationNames.join(", ")} failed earlier and blocks later ones; ` +
          "fix the database by hand, then mark it rolled back",
      );
    }
    const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList, filters });
    return appliedMigrationNames;
  } catch (err) {
    if (err instanceof MigrationError) throw err;
    throw new MigrationError(describeFailure(err, scriptError), err);
  } finally {
    engine?.free();
    await turn?.query("COMMIT").catch(() => {});
    await turn?.end().catch(() => {});
    await pool.end();
  }
}

/** Not Prisma's own migrator lock key (72707369): this one is held around it, on another connection. */
const MIGRATION_TURN_LOCK_KEY = 72707370;
const MIGRATION_TURN_WAIT_S = 300;

/** "migration <name> failed: <PostgreSQL's message> (SQLSTATE …); it was rolled back", as far as known. */
function describeFailure(err: unknown, scriptError: Error | undefined): string {
  const trace = describeEngineError((err as { cause?: unknown }).cause ?? err);
  const name = /migration_name="([^"]+)"/.exec(trace)?.[1];
  const subject = name ? `migration ${name}` : "migration";
  if (!scriptError) return `${subject} failed: ${describeEngineError(err)}`;
  const code = (scriptError as { code?: string }).code;
  return `${subject} failed: ${scriptError.message}${code ? ` (SQLSTATE ${code})` : ""}; it was rolled back`;
}

function describeEngineError(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === "object" && err !== null && "message" in err) return String((err as { message: unknown }).message);
  return String(err);
}
