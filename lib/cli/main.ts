/**
 * The `keyward` command line: the program and its commands, one file each under commands/. Every
 * database command opens the same database the server uses (DATABASE_URL, or the embedded one, shared
 * with a running server through its port) and applies pending migrations first (lib/db/prepare.ts,
 * shared with `keyward start`), parses its input with the same zod schemas as the API routes, prints to
 * stdout, reports errors on stderr and exits non-zero on failure.
 */
import "server-only";
import { Command } from "commander";
import { KeywardError } from "@/lib/errors";
import { registerApiKey } from "./commands/apikey";
import { registerInlet } from "./commands/inlet";
import { registerMigrate } from "./commands/migrate";
import { registerPartitions } from "./commands/partitions";
import { registerPrune } from "./commands/prune";
import { registerReplay } from "./commands/replay";
import { registerSource } from "./commands/source";
import { registerStart } from "./commands/start";
import { registerUser } from "./commands/user";
import { registerDemo } from "./commands/demo";
import { registerRedis } from "./commands/redis";

/** The installed package's version (bundled into the compiled CLI with the rest of its inputs). */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- JSON read at run time by tsx, bundled by esbuild
const { version } = require("@/package.json") as { version: string };

const program = new Command()
  .name("keyward")
  .version(version, "-V, --version", "print the version of keyward")
  .description("Webhook and event idempotency: claim once, expire deliberately, audit, replay safely.")
  .showHelpAfterError()
  .configureOutput({ outputError: (text, write) => write(text) });

for (const register of [registerStart, registerMigrate, registerSource, registerApiKey, registerUser, registerReplay, registerPrune, registerPartitions, registerInlet, registerRedis, registerDemo]) {
  register(program);
}

program.parseAsync(process.argv).catch((err: unknown) => {
  const message = err instanceof KeywardError || err instanceof Error ? err.message : String(err);
  console.error(`keyward: ${message}`);
  process.exitCode = 1;
});
