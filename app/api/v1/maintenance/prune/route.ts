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
import { listPruneRunsQuery, pruneRequest } from "@/lib/retention/prune-schema";
import { parseOrThrow } from "@/lib/http/validate";
import { clientAddress, json, readOptionalJson, route } from "@/lib/http/route";

export const GET = route(
  async ({ req }) => {
    const q = parseOrThrow(listPruneRunsQuery, Object.fromEntries(new URL(req.url).searchParams));
    const [runs, mode] = await Promise.all([listPruneRuns(q.limit), readDedupMode()]);
    return json({ runs, mode });
  },
  { allow: ["read"] },
);

export const POST = route(
  async ({ req, principal }) => {
    const options = parseOrThrow(pruneRequest, await readOptionalJson(req, 4096));
    return json(await pruneNow(principal, "api", options, clientAddress(req)));
  },
  { allow: ["operator"] },
);
