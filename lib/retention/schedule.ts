/**
 * The pruning schedule inside `keyward start`: one bounded run (prune.ts) every
 * KEYWARD_PRUNE_INTERVAL_SECONDS (default 60; 0 turns it off, e.g. when an external scheduler calls
 * POST /api/v1/maintenance/prune/external instead). The next run is timed from the end of the previous
 * one, so runs of one process never overlap; across instances and processes the prune lease
 * (lib/db/lease.ts) lets one run and the others skip. A failed run is logged and retried at the next tick; it never stops the server. After each
 * run, settled dead letters past their retention are pruned too (lib/deadletters/prune.ts, bounded).
 */
import "server-only";
import os from "node:os";
import { loadEnv } from "../config/env";
import { pruneExpiredKeys } from "./prune";
import { pruneSettledDeadLetters } from "../deadletters/prune";

/** Starts the schedule; the returned function stops it and waits for a run in progress to end its batch. */
export function schedulePruning(log: (msg: string) => void): () => Promise<void> {
  const everyMs = loadEnv().KEYWARD_PRUNE_INTERVAL_SECONDS * 1000;
  if (everyMs === 0) return async () => {};
  const abort = new AbortController();
  const actor = `schedule@${os.hostname()}`;
  let running: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const tick = () => {
    running = pruneExpiredKeys({ trigger: "schedule", actor, signal: abort.signal })
      .then(
        (r) => {
          if ("run" in r && r.run.stopped === "time_budget") {
            log(`pruning stopped at its time budget after ${r.run.rows} keys; the next run continues`);
          }
        },
        (err: unknown) => log(`pruning failed (will retry in ${everyMs / 1000} s): ${(err as Error).message}`),
      )
      .then(async () => {
        if (!abort.signal.aborted) await pruneSettledDeadLetters();
      })
      .catch((err: unknown) => log(`dead-letter pruning failed (will retry): ${(err as Error).message}`))
      .finally(() => {
        running = undefined;
        if (!abort.signal.aborted) arm();
      });
  };
  const arm = () => {
    timer = setTimeout(tick, everyMs);
    timer.unref();
  };
  arm();

  return async () => {
    abort.abort();
    clearTimeout(timer);
    await running;
  };
}
