/**
 * The pruning job inside `keyward start` (lib/jobs/registry.ts): one bounded run (prune.ts) every
 * KEYWARD_PRUNE_INTERVAL_SECONDS (default 60; 0 turns it off, e.g. when an external scheduler calls
 * POST /api/v1/maintenance/prune/external instead). The next run is timed from the end of the previous
 * one, so runs of one process never overlap; across instances and processes the prune lease
 * (lib/db/lease.ts) lets one run and the others skip. A failed run is logged and retried at the next tick;
 * it never stops the server. After each run, settled dead letters past their retention are pruned too
 * (lib/deadletters/prune.ts, bounded). Stopping the registry ends a run in progress after its batch.
 */
import "server-only";
import os from "node:os";
import { loadEnv } from "@/lib/config/env";
import { DEFAULT_WEDGED_AFTER_MS, type Job } from "@/lib/jobs/registry";
import { pruneExpiredKeys } from "./prune";
import { pruneSettledDeadLetters } from "@/lib/deadletters/prune";

export function pruningJob(log: (msg: string) => void): Job {
  const env = loadEnv();
  const everyMs = env.KEYWARD_PRUNE_INTERVAL_SECONDS * 1000;
  const actor = `schedule@${os.hostname()}`;
  return {
    name: "pruning",
    everyMs,
    // A run stops at its budget, then the dead letters' bounded pass: wedged only well past both.
    wedgedAfterMs: env.KEYWARD_PRUNE_BUDGET_MS + DEFAULT_WEDGED_AFTER_MS,
    async run(signal) {
      try {
        const r = await pruneExpiredKeys({ trigger: "schedule", actor, signal });
        if ("run" in r && r.run.stopped === "time_budget") {
          log(`pruning stopped at its time budget after ${r.run.rows} keys; the next run continues`);
        }
      } catch (err) {
        // Logged here, not thrown: the dead letters are pruned even when the keys were not.
        log(`pruning failed (will retry in ${everyMs / 1000} s): ${(err as Error).message}`);
      }
      if (signal.aborted) return;
      await pruneSettledDeadLetters().catch((err: unknown) => log(`dead-letter pruning failed (will retry): ${(err as Error).message}`));
    },
  };
}
