/**
 * POST /api/v1/maintenance/prune/external — the same bounded pruning run as POST
 * /api/v1/maintenance/prune, for an external scheduler (cron, a Kubernetes CronJob) that authenticates
 * with `X-Keyward-Maintenance-Secret: $KEYWARD_MAINTENANCE_SECRET` instead of a person or an API key.
 * 404 while no secret is configured, 401 for a missing or wrong one. Optional body
 * { batchSize?, pauseMs?, budgetMs? }. Recorded in prune_runs (trigger `external`), not in the operator
 * action log: a scheduler calling every minute would fill it.
 */
import { assertMaintenanceSecret } from "@/lib/auth/maintenance-secret";
import { pruneExpiredKeys } from "@/lib/retention/prune";
import { pruneOutcomeSchema, pruneRequest } from "@/lib/retention/prune-schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ body }) => json(await pruneExpiredKeys({ ...body, trigger: "external", actor: "external" })), {
  public: "external schedulers authenticate with KEYWARD_MAINTENANCE_SECRET",
  // The secret is checked before the body is read: without it, nothing about the route is answered.
  guard: (req: Request) => assertMaintenanceSecret(req.headers),
  body: pruneRequest,
  optionalBody: true,
  maxBodyBytes: 4096,
  summary: "Prune now, for an external scheduler sending X-Keyward-Maintenance-Secret",
  responses: { 200: { description: "{ run }, or { skipped } while another run prunes", schema: pruneOutcomeSchema } },
  errors: [404],
});
