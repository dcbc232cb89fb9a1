/**
 * `keyward demo` (and `npm run demo`): the console on a separate embedded database in ./.keyward-demo/,
 * filled on first start with a few days of simulated history (lib/demo/seed.ts), with a banner saying it
 * is demo data. A configured DATABASE_URL is never used: the demo cannot touch a real database.
 */
import { spawnSync } from "node:child_process";
import { rm } from "node:fs/promises";
import path from "node:path";
import { Option, type Command } from "commander";
import { openDatabase } from "@/lib/db/open";
import { migrate } from "@/lib/db/migrate";
import { closeDb } from "@/lib/db/client";
import { ensureAuditPartitions } from "@/lib/audit/partitions";
import { DEMO_DAYS, DEMO_USER, isSeeded, seedDemo } from "@/lib/demo/seed";

export const DEMO_DIR = ".keyward-demo";

/** ./.keyward-demo/, or KEYWARD_DEMO_DIR (the tests use their own). */
export const demoDir = () => path.resolve(process.env.KEYWARD_DEMO_DIR || DEMO_DIR);

/** Points this process at the demo's own embedded database, whatever the environment says. */
export function useDemoEnvironment(dir = demoDir()): void {
  for (const name of ["DATABASE_URL", "KEYWARD_MIGRATE_DATABASE_URL"]) delete process.env[name];
  process.env.KEYWARD_DATA_DIR = dir;
  process.env.KEYWARD_DEMO = "1";
}

/** Migrates the demo database and seeds it if it is new; releases it again. */
export async function prepareDemo(log: (msg: string) => void): Promise<void> {
  const database = await openDatabase();
  try {
    await migrate(database.url);
    await ensureAuditPartitions();
    if (await isSeeded()) {
      log("demo data found; starting");
    } else {
      const r = await seedDemo((msg) => log(`seeding: ${msg}`)).catch((err: unknown) => {
        throw new Error(`seeding the demo failed (${(err as Error).message}); start over with \`keyward demo --reset\``);
      });
      log(`seeded ${DEMO_DAYS} days: ${r.claims} claims, ${r.duplicates} duplicates, ${r.lateDuplicates} late duplicates, ${r.keys} live keys`);
    }
  } finally {
    await closeDb();
    await database.close();
    delete process.env.DATABASE_URL; // openDatabase pointed it at the embedded port it has just closed
  }
}

export function registerDemo(program: Command): void {
  program
    .command("demo")
    .description(`the console with ${DEMO_DAYS} days of simulated history for three senders, on its own embedded database in ./${DEMO_DIR}/ (never DATABASE_URL)`)
    .option("--reset", `delete ./${DEMO_DIR}/ first and seed it anew`)
    .option("-p, --port <port>", "serve on this port (default: $PORT, else 3000): http://localhost:<port>")
    .option("--no-build", "serve the existing build without checking whether it is current")
    .addOption(new Option("--prepare-only", "migrate and seed, then exit (run by `keyward demo` itself)").hideHelp())
    .action(async (o: { reset?: boolean; build: boolean; prepareOnly?: boolean; port?: string }) => {
      const log = (msg: string) => console.log(`[keyward demo] ${msg}`);
      if (o.port !== undefined) {
        if (!/^\d{1,5}$/.test(o.port) || Number(o.port) > 65535) throw new Error(`--port ${o.port}: not a port number (1-65535)`);
        process.env.PORT = o.port;
      }
      if (process.env.DATABASE_URL) log(`DATABASE_URL is ignored: the demo keeps its own data in ./${DEMO_DIR}/`);
      useDemoEnvironment();
      if (o.prepareOnly) return prepareDemo(log);
      if (o.reset) await rm(demoDir(), { recursive: true, force: true });
      // Seeding runs in a process of its own, so the server starts with nothing cached from it (the pool,
      // the auth instance) and owns the embedded database alone.
      const prepared = spawnSync(process.execPath, [process.argv[1], "demo", "--prepare-only"], { stdio: "inherit", env: process.env });
      if (prepared.status !== 0) process.exit(prepared.status ?? 1);
      log(`sign in as ${DEMO_USER.username} / ${DEMO_USER.password} (an admin of the demo only)`);
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazily, so only this command loads Next
      const { startServer } = require("@/lib/server/start") as typeof import("@/lib/server/start");
      try {
        await startServer({ build: o.build });
      } catch (err) {
        // The embedded database would keep the process alive after a failed start: leave.
        console.error(`keyward: ${(err as Error).message}`);
        process.exit(1);
      }
    });
}
