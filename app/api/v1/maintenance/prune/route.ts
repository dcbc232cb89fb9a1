/**
 * POST /api/v1/maintenance/prune — "prune now": one bounded run of pruning expired dedup keys, optional
 * body { batchSize?, pauseMs?, budgetMs? }; answers { run } with rows, batches, duration and rows/s, or
 * { skipped } when another run (any instance) is pruning. Operators and admins (and API keys with scope
 * operator); recorded in the operator action log as `prune.run`.
 * GET /api/v1/maintenance/prune?limit — the most recent runs, newest first, with rows/s, and the dedup
 * table's `mode` ("single" | "partition"; runs in partition mode drop whole days) (viewers and up).
 */
import { listPruneRuns, pruneNow } from "@/lib/retention/prune";
import { readDedupMode } from "@/lib/claims/mode";
import { listPruneRunsQuery, pruneOutcomeSchema, pruneRequest, pruneRunsSchema } from "@/lib/retention/prune-schema";
import { clientAddress, json, route } from "@/lib/http/route";

export const GET = route(
  async ({ query }) => {
    const [runs, mode] = await Promise.all([listPruneRuns(query.limit), readDedupMode()]);
    return json({ runs, mode });
  },
  {
    allow: ["read"],
    query: listPruneRunsQuery,
    summary: "The most recent pruning runs and the dedup table's mode",
    responses: { 200: { description: "{ runs, mode }", schema: pruneRunsSchema } },
  },
);

export const POST = route(async ({ req, body, principal }) => json(await pruneNow(principal, "api", body, clientAddress(req))), {
  allow: ["operator"],
  body: pruneRequest,
  optionalBody: true,
  maxBodyBytes: 4096,
  summary: "Prune now: one bounded run of pruning expired dedup keys",
  responses: { 200: { description: "{ run }, or { skipped } while another run prunes", schema: pruneOutcomeSchema } },
});
