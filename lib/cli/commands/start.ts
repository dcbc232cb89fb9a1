/** `keyward start`: build if needed, migrate, serve (lib/server/start.ts). */
import type { Command } from "commander";

export function registerStart(program: Command): void {
  program
    .command("start")
    .description("build if needed, migrate, and serve the console and API (embedded database unless DATABASE_URL is set)")
    .option("--no-build", "serve the existing build without checking whether it is current")
    .action(async (opts: { build: boolean }) => {
      // required lazily so that only this command loads Next (tsx's require hook resolves the .ts file)
      const { startServer } = require("../../server/start") as typeof import("../../server/start");
      await startServer({ build: opts.build });
    });
}
