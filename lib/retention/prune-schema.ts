/** Pruning's request schemas and answer types, shared by the routes, the CLI, the console and tests. */
import { z } from "zod";
import { instant } from "@/lib/http/fields";

export const PRUNE_TRIGGERS = ["schedule", "cli", "api", "external"] as const;
export type PruneTrigger = (typeof PRUNE_TRIGGERS)[number];

/**
 * Why a run ended: nothing expired was left (a batch came back short), the time budget was spent, a
 * statement failed, the server was shutting down, or (partition mode) an expired partition stayed locked
 * past the drop's lock timeout (it is dropped by a later run).
 */
export const PRUNE_STOPS = ["drained", "time_budget", "error", "shutdown", "lock_timeout"] as const;
export type PruneStop = (typeof PRUNE_STOPS)[number];

/** The answer when another run (in this or any other instance) holds the pruning lock. */
export const PRUNE_SKIPPED = "another prune is running";

/** Per-run overrides of KEYWARD_PRUNE_BATCH_SIZE / _PAUSE_MS / _BUDGET_MS (the same bounds). */
export const pruneRequest = z.strictObject({
  batchSize: z.number().int().min(1).max(100_000).optional(),
  pauseMs: z.number().int().min(0).max(60_000).optional(),
  budgetMs: z.number().int().min(1).max(3_600_000).optional(),
});
export type PruneRequest = z.infer<typeof pruneRequest>;

export const listPruneRunsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(50),
});
export type ListPruneRunsQuery = z.infer<typeof listPruneRunsQuery>;

/** One row of prune_runs as the API answers it. */
export const pruneRunRecordSchema = z.object({
  id: z.string(),
  startedAt: instant,
  /** null while the run is going (or if its process died before it could finish the record). */
  finishedAt: instant.nullable(),
  mode: z.enum(["batch", "partition"]),
  trigger: z.enum(PRUNE_TRIGGERS),
  actor: z.string().nullable(),
  batches: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  partitionsDropped: z.number().int().nonnegative(),
  stopped: z.enum(PRUNE_STOPS).nullable(),
  error: z.string().nullable(),
  durationMs: z.number().nonnegative().nullable(),
  /** rows ÷ (finishedAt − startedAt), pauses between batches included; null until finished. */
  rowsPerSecond: z.number().nonnegative().nullable(),
});
export type PruneRunRecord = z.infer<typeof pruneRunRecordSchema>;

/** POST /api/v1/maintenance/prune (and …/external): the run's record, or why none ran. */
export const pruneOutcomeSchema = z.union([z.object({ run: pruneRunRecordSchema }), z.object({ skipped: z.literal(PRUNE_SKIPPED) })]);
export type PruneOutcome = z.infer<typeof pruneOutcomeSchema>;

/** GET /api/v1/maintenance/prune: the most recent runs, newest first, and the dedup table's mode (lib/claims/mode.ts). */
export const pruneRunsSchema = z.object({ runs: z.array(pruneRunRecordSchema), mode: z.enum(["single", "partition"]) });
export type PruneRuns = z.infer<typeof pruneRunsSchema>;

/** rows/s of a finished run, rounded; 0 rows → 0; a run too short to time → null. */
export function rowsPerSecond(rows: number, durationMs: number | null): number | null {
  if (durationMs === null) return null;
  if (rows === 0) return 0;
  return durationMs > 0 ? Math.round((rows * 1000) / durationMs) : null;
}
