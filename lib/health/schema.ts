/**
 * The answers of the health probes (GET /healthz, GET /readyz; lib/health/http.ts), shared by the routes,
 * the API description and the tests.
 */
import { z } from "zod";
import { instant } from "@/lib/http/fields";

/** GET /healthz: the process serves HTTP. Nothing else is asked (no database). */
export const livenessSchema = z.object({
  status: z.literal("ok"),
  /** Seconds since this process started. */
  uptimeSeconds: z.number().nonnegative(),
});
export type Liveness = z.infer<typeof livenessSchema>;

const checkSchema = z.object({
  ok: z.boolean(),
  /** Why not, in a sentence (null when ok). */
  reason: z.string().nullable(),
});

export const jobStatusSchema = z.object({
  name: z.string(),
  everyMs: z.number().int(),
  /** ISO times; null: not yet. */
  runningSince: instant.nullable(),
  lastSucceededAt: instant.nullable(),
  lastFailedAt: instant.nullable(),
  lastError: z.string().nullable(),
  /** Why the job is wedged (a pass running or overdue longer than its bound), or null. */
  wedged: z.string().nullable(),
});
export type JobHealth = z.infer<typeof jobStatusSchema>;

/**
 * GET /readyz: the body of a `200` (ready), and the `details` of a `503 not_ready` (in the one error body,
 * whose message joins the reasons).
 */
export const readinessSchema = z.object({
  status: z.enum(["ready", "not_ready"]),
  /** Each reason this instance is not ready (empty when ready). */
  reasons: z.array(z.string()),
  checks: z.object({
    /** The database answered a query within KEYWARD_READYZ_TIMEOUT_MS. */
    database: checkSchema.extend({ ms: z.number().nonnegative() }),
    /** Every migration this build ships is applied (a database ahead of the build is fine: `unknown`). */
    migrations: checkSchema.extend({ missing: z.array(z.string()), unknown: z.array(z.string()) }),
    /** No job this process runs is wedged; failing jobs are listed but do not make it unready. */
    jobs: checkSchema.extend({ jobs: z.array(jobStatusSchema) }),
  }),
});
export type Readiness = z.infer<typeof readinessSchema>;
