/** `keyward start`: build if needed, migrate, serve (lib/server/start.ts). */
import type { Command } from "commander";

export function registerStart(program: Command): void {
  program
    .command("start")
    .description("build if needed, migrate, and serve the console and API (embedded database unless DATABASE_URL is set)")
    .option("--no-build", "serve the existing build without checking whether it is current")
    .action(async (opts: { build: boolean }) => {
      // required lazily so that only this command loads Next (tsx's require hook resolves the .ts file)
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazily, so only this command loads Next
      const { startServer } = require("@/lib/server/start") as typeof import("@/lib/server/start");
      await startServer({ build: opts.build });
    });
}
