/** `keyward prune`: one bounded pruning run now. Options are parsed by the same schema as POST /api/v1/maintenance/prune. */
import type { Command } from "commander";
import { cliPrincipal } from "@/lib/auth/principal";
import { parseInput } from "@/lib/http/validate";
import { pruneNow } from "@/lib/retention/prune";
import { pruneRequest } from "@/lib/retention/prune-schema";
import { milliseconds, wholeNumber, withDatabase } from "@/lib/cli/io";

export function registerPrune(program: Command): void {
  program
    .command("prune")
    .description("delete expired dedup keys now: one bounded run in batches (the server also prunes on its own schedule)")
    .option("--batch-size <n>", "keys per batch (default KEYWARD_PRUNE_BATCH_SIZE, 5000)", wholeNumber)
    .option("--budget <duration>", "start no batch after this long, e.g. 30s, 2m, 500ms (default KEYWARD_PRUNE_BUDGET_MS, 30s)", milliseconds)
    .option("--pause <ms>", "pause between batches in ms (default KEYWARD_PRUNE_PAUSE_MS, 50)", wholeNumber)
    .option("--json", "print the run as JSON")
    .action(async (o: { batchSize?: number; budget?: number; pause?: number; json?: boolean }) => {
      const options = parseInput(pruneRequest, { batchSize: o.batchSize, budgetMs: o.budget, pauseMs: o.pause });
      await withDatabase(async () => {
        const outcome = await pruneNow(cliPrincipal(), "cli", options);
        if (o.json) return console.log(JSON.stringify(outcome, null, 2));
        if ("skipped" in outcome) return console.log(`skipped: ${outcome.skipped}`);
        const { run } = outcome;
        const seconds = ((run.durationMs ?? 0) / 1000).toFixed(2);
        console.log(
          `pruned ${run.rows} expired keys in ${run.batches} batch${run.batches === 1 ? "" : "es"}, ${seconds} s, ` +
            `${(run.rowsPerSecond ?? 0).toLocaleString("en-US")} keys/s (run ${run.id}, stopped: ${run.stopped})`,
        );
      });
    });
}
