/**
 * In-process counters for the Prometheus exposition (prometheus.ts reads them at scrape), kept apart from
 * prom-client so the code that counts (the claim fast path, the pruner, which the CLI runs too) loads
 * nothing more than this: claim answers by route and HTTP status, and the keys prune runs deleted.
 * Process-wide (lib/process-global.ts): the custom server and Next's route bundles count into one place.
 * Counts since the process started; scrape every instance.
 */
import { processGlobal } from "@/lib/process-global";

type OpsCounters = {
  /** `${route} ${status}` → answers. */
  claimResponses: Map<string, number>;
  /** Keys deleted by this process's prune runs (batches and dropped partitions' rows). */
  prunedKeys: number;
};

const counters = processGlobal("opsCounters", (): OpsCounters => ({ claimResponses: new Map(), prunedKeys: 0 }));

/** One answer of a claim route (`claim` or `batch`) with its HTTP status. */
export function countClaimResponse(route: "claim" | "batch", status: number): void {
  const key = `${route} ${status}`;
  counters.claimResponses.set(key, (counters.claimResponses.get(key) ?? 0) + 1);
}

/** The keys one prune run of this process deleted (its batches and its dropped partitions' rows). */
export function countPrunedKeys(keys: number): void {
  counters.prunedKeys += keys;
}

export function opsCounters(): Readonly<OpsCounters> {
  return counters;
}
