/**
 * The notification evaluator: a job of the registry (notificationsJob, started by `keyward start` when
 * KEYWARD_NOTIFY_URL is set) that every KEYWARD_NOTIFY_INTERVAL_SECONDS finds the watched conditions
 * (conditions.ts), decides what to say (decide.ts: throttled per condition, a resolved message when one
 * clears), sends it (send.ts) and records each condition's state and each message.
 *
 * One instance at a time: a pass holds the job lease `notifications` (lib/db/lease.ts); an instance that
 * finds it taken skips the pass, so each message goes out once however many servers run. A condition's new
 * state is recorded only once its message is delivered (or when it needs none): a failed delivery is
 * retried at the next pass. How it bounds its work: the conditions' own bounds (conditions.ts), one message
 * per condition per pass, and messages older than DELIVERIES_KEPT_DAYS and conditions cleared more than
 * CLEARED_KEPT_DAYS ago deleted, at most DELETE_BATCH rows each per pass.
 */
import "server-only";
import { execute } from "@/lib/db/sql";
import type { Job } from "@/lib/jobs/registry";
import { withLease } from "@/lib/db/lease";
import { database, type Db } from "@/lib/db/transaction";
import { notifyConfig, type NotifyConfig } from "./config";
import { findConditions } from "./conditions";
import { decideNotifications, type ActiveCondition, type ConditionState } from "./decide";
import { postMessage, type SendResult } from "./send";
import type { ConditionKind, MessageKind } from "./schema";

export const NOTIFY_LEASE = "notifications";
const LEASE_SECONDS = 60;
export const DELIVERIES_KEPT_DAYS = 30;
export const CLEARED_KEPT_DAYS = 7;
const DELETE_BATCH = 1000;

export type EvaluateOptions = {
  /** The time decisions are made at (default: now). For tests of the throttle. */
  now?: Date;
  config?: NotifyConfig;
  signal?: AbortSignal;
};

export type EvaluateOutcome = { sent: { kind: MessageKind; key: string; ok: boolean }[]; active: number };

/** One pass under the lease; `null` when another instance holds it, or notifications are off. */
export async function evaluateNotifications(options: EvaluateOptions = {}, db: Db = database()): Promise<EvaluateOutcome | null> {
  const config = options.config ?? notifyConfig();
  if (!config) return null;
  const held = await withLease(NOTIFY_LEASE, LEASE_SECONDS, () => evaluateOnce(config, options, db));
  return held.held ? held.value : null;
}

async function evaluateOnce(config: NotifyConfig, options: EvaluateOptions, db: Db): Promise<EvaluateOutcome> {
  const now = options.now ?? new Date();
  const active = await findConditions(db);
  const rows = await db.prisma.notificationCondition.findMany();
  const previous: ConditionState[] = rows.map((r) => ({ ...r, kind: r.kind as ConditionKind }));
  const sent: EvaluateOutcome["sent"] = [];
  for (const step of decideNotifications(previous, active, now, config.throttleMs)) {
    if (options.signal?.aborted) break;
    if (step.send) {
      const before = previous.find((p) => p.key === step.condition.key);
      const since = step.send === "resolved" ? (before?.since ?? null) : step.next.since;
      const result = await postMessage({ kind: step.send, condition: step.condition, since, at: now }, config);
      await recordDelivery(step.send, step.condition, result, null, db);
      sent.push({ kind: step.send, key: step.condition.key, ok: result.ok });
      if (!result.ok) continue; // recorded state unchanged: the next pass tries again
    }
    await saveState(step.next, now, db);
  }
  await deleteOld(db);
  return { sent, active: active.length };
}

async function saveState(s: ConditionState, now: Date, db: Db): Promise<void> {
  const data = { kind: s.kind, source: s.source, summary: s.summary, firing: s.firing, since: s.since, announced: s.announced, lastSentAt: s.lastSentAt, updatedAt: now };
  await db.prisma.notificationCondition.upsert({ where: { key: s.key }, create: { key: s.key, ...data }, update: data });
}

/** Records one message and whether it was delivered. */
export async function recordDelivery(kind: MessageKind, condition: ActiveCondition | null, result: SendResult, actor: string | null, db: Db = database()) {
  return db.prisma.notificationDelivery.create({
    data: {
      kind,
      conditionKey: condition?.key ?? null,
      summary: condition?.summary ?? "Test notification",
      ok: result.ok,
      status: result.status,
      error: result.error,
      actor,
    },
  });
}

/** Raw SQL: bounded deletes (at most DELETE_BATCH rows each, oldest first). */
async function deleteOld(db: Db): Promise<void> {
  await execute(
    `DELETE FROM notification_deliveries WHERE id IN (
       SELECT id FROM notification_deliveries WHERE at < now() - make_interval(days => $1) ORDER BY at LIMIT $2)`,
    [DELIVERIES_KEPT_DAYS, DELETE_BATCH],
    db,
  );
  await execute(
    `DELETE FROM notification_conditions WHERE key IN (
       SELECT key FROM notification_conditions WHERE NOT firing AND since < now() - make_interval(days => $1) LIMIT $2)`,
    [CLEARED_KEPT_DAYS, DELETE_BATCH],
    db,
  );
}

/**
 * The evaluator as a job of the registry (lib/jobs/registry.ts): every KEYWARD_NOTIFY_INTERVAL_SECONDS while
 * KEYWARD_NOTIFY_URL is set (off otherwise, or with the interval 0). A pass's deliveries take at most
 * 10 s each (send.ts).
 */
export function notificationsJob(): Job {
  const config = notifyConfig();
  return {
    name: "notifications",
    everyMs: config ? config.intervalMs : 0,
    async run(signal) {
      await evaluateNotifications({ config: config!, signal });
    },
  };
}

