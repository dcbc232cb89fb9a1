/**
 * The conditions the notification evaluator watches, found now (evaluate.ts runs this once per interval,
 * on one instance):
 * - replay_failing / replay_stalled: a running or paused replay whose health (lib/replay/health.ts) is
 *   failing or stalled, one condition per replay;
 * - keys_at_risk: a source with pending dead letters whose event was processed and whose key is gone, or
 *   whose key expires within 24 hours (lib/deadletters/risk.ts);
 * - late_duplicates: a source with late duplicates (events processed twice) in the last hour;
 * - pruning_failing: prune runs ended in an error at least PRUNE_FAILURES times in a row.
 * The same figures as GET /metrics and its alerts (deploy/prometheus/keyward-rules.yml), so a small team
 * without Prometheus hears of the same things. Bounded: running/paused replays (a partial index), the
 * key-risk scan's own bound, an index range per source, the newest prune runs.
 */
import "server-only";
import { z } from "zod";
import { query } from "@/lib/db/sql";
import { database, type Db } from "@/lib/db/transaction";
import { keyRiskBySource } from "@/lib/deadletters/risk";
import { listReplays } from "@/lib/replay/replays";
import { conditionPath, type ActiveCondition } from "./decide";

/** Failed prune runs in a row that make pruning a condition (the alert's threshold too). */
export const PRUNE_FAILURES = 2;
const REPLAYS_WATCHED = 200;

export async function findConditions(db: Db = database()): Promise<ActiveCondition[]> {
  const found: ActiveCondition[] = [];

  for (const status of ["running", "paused"] as const) {
    const { items } = await listReplays({ status, limit: REPLAYS_WATCHED }, db);
    for (const r of items) {
      const state = r.health.state;
      if (state !== "failing" && state !== "stalled") continue;
      found.push({
        key: `replay_${state}:${r.id}`,
        kind: state === "failing" ? "replay_failing" : "replay_stalled",
        source: r.source,
        summary: `Replay ${r.id.slice(0, 8)} of source ${r.source} is ${state}: ${r.health.reason ?? "no reason recorded"}`,
        path: conditionPath("replay_failing", `replay:${r.id}`, r.source),
      });
    }
  }

  for (const [source, risk] of await keyRiskBySource(db)) {
    if (risk.expired === 0 && risk.expiring === 0) continue;
    const parts = [
      risk.expired ? `${risk.expired} processed event${risk.expired === 1 ? " whose key is" : "s whose keys are"} gone (a replay would process ${risk.expired === 1 ? "it" : "them"} twice)` : "",
      risk.expiring ? `${risk.expiring} key${risk.expiring === 1 ? "" : "s"} expiring within 24 h` : "",
    ].filter(Boolean);
    found.push({
      key: `keys_at_risk:${source}`,
      kind: "keys_at_risk",
      source,
      summary: `Dead letters of source ${source} have keys at risk: ${parts.join("; ")}`,
      path: conditionPath("keys_at_risk", `keys_at_risk:${source}`, source),
    });
  }

  // Raw SQL: an index range per source (late_duplicates_source_late_idx).
  const late = await query(
    z.object({ source: z.string(), n: z.number() }),
    `SELECT source, count(*)::int8 AS n FROM late_duplicates WHERE late_claim_at > now() - interval '1 hour' GROUP BY source ORDER BY source`, [], db
  );
  for (const { source, n } of late) {
    found.push({
      key: `late_duplicates:${source}`,
      kind: "late_duplicates",
      source,
      summary: `${n} event${n === 1 ? "" : "s"} of source ${source} ${n === 1 ? "was" : "were"} processed twice in the last hour (late duplicates: its TTL is too short)`,
      path: conditionPath("late_duplicates", `late_duplicates:${source}`, source),
    });
  }

  // Raw SQL: the newest runs through the started_at index, up to the last one that did not fail.
  const [prune] = await query(
    z.object({ failures: z.number(), last_error: z.string().nullable() }),
    `WITH ok AS (SELECT started_at FROM prune_runs WHERE stopped IS NOT NULL AND stopped <> 'error' ORDER BY started_at DESC LIMIT 1)
     SELECT count(*)::int8 AS failures,
            (SELECT error FROM prune_runs WHERE stopped = 'error' ORDER BY started_at DESC LIMIT 1) AS last_error
     FROM prune_runs WHERE stopped = 'error' AND started_at > coalesce((SELECT started_at FROM ok), '-infinity')`, [], db
  );
  if (prune.failures >= PRUNE_FAILURES) {
    found.push({
      key: "pruning_failing",
      kind: "pruning_failing",
      source: null,
      summary: `Pruning of expired keys failed ${prune.failures} times in a row${prune.last_error ? `: ${prune.last_error}` : ""}`,
      path: conditionPath("pruning_failing", "pruning_failing", null),
    });
  }
  return found;
}
