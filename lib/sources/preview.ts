/**
 * The edit preview: what a change to a source would give — its TTL, the invariant checks and the
 * projected size — computed by the same code that checks a saved source (applySourceUpdate, checkTtl,
 * reportOf), without saving anything or recording an action. The console calls it while an admin types.
 */
import { loadEnv } from "@/lib/config/env";
import { claimRates, sizeBasis } from "@/lib/metrics/projection";
import { applySourceUpdate, checkTtl, ttlOf, type SourceChange, type SourcePreview } from "./schema";
import { getSource, reportOf } from "./sources";

/** The source as it is and as `change` (a parsed PATCH body) would leave it. Refuses what PATCH refuses (422). */
export async function previewSourceUpdate(name: string, change: SourceChange): Promise<SourcePreview> {
  const before = await getSource(name);
  const merged = applySourceUpdate(before, change);
  checkTtl(merged);
  const after = {
    ...before,
    ...merged,
    ttlSeconds: ttlOf(merged),
    ...(change.deadLetterRetentionSeconds !== undefined ? { deadLetterRetentionSeconds: change.deadLetterRetentionSeconds } : {}),
    ...(change.replayDestination !== undefined ? { replayDestination: change.replayDestination } : {}),
  };
  const [basis, rates] = await Promise.all([sizeBasis(), claimRates(before.name)]);
  const ctx = { ...basis, claimRate: rates.get(before.name) ?? 0, auditRetentionSeconds: loadEnv().KEYWARD_AUDIT_RETENTION_DAYS * 86400 };
  return { current: reportOf(before, ctx), preview: reportOf(after, ctx) };
}
