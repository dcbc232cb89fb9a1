/**
 * What the console and GET /api/v1/notifications show of notifications (the webhook's settings, the
 * conditions and the latest messages), and the test message an operator sends from there
 * (POST /api/v1/notifications/test).
 */
import "server-only";
import type { Principal } from "@/lib/auth/principal";
import { actorOf } from "@/lib/auth/principal";
import { recordAction } from "@/lib/audit/actions";
import { KeywardError } from "@/lib/errors";
import { database, type Db } from "@/lib/db/transaction";
import { maskUrl, notifyConfig } from "./config";
import { recordDelivery } from "./evaluate";
import { postMessage } from "./send";
import type { ConditionKind, MessageKind, NotificationStatus, TestNotificationResult } from "./schema";

/** The latest messages listed. */
export const DELIVERIES_SHOWN = 20;

export async function notificationStatus(db: Db = database()): Promise<NotificationStatus> {
  const config = notifyConfig();
  const conditions = await db.prisma.notificationCondition.findMany({ orderBy: [{ firing: "desc" }, { since: "desc" }], take: 200 });
  const deliveries = await db.prisma.notificationDelivery.findMany({ orderBy: { at: "desc" }, take: DELIVERIES_SHOWN });
  return {
    configured: config !== null,
    target: config ? maskUrl(config.url) : null,
    format: config?.format ?? null,
    intervalSeconds: config ? config.intervalMs / 1000 : 0,
    throttleSeconds: config ? config.throttleMs / 1000 : 0,
    conditions: conditions.map((c) => ({
      key: c.key,
      kind: c.kind as ConditionKind,
      source: c.source,
      summary: c.summary,
      firing: c.firing,
      since: c.since.toISOString(),
      announced: c.announced,
      lastSentAt: c.lastSentAt?.toISOString() ?? null,
    })),
    deliveries: deliveries.map((d) => ({
      id: String(d.id),
      at: d.at.toISOString(),
      conditionKey: d.conditionKey,
      kind: d.kind as MessageKind,
      summary: d.summary,
      ok: d.ok,
      status: d.status,
      error: d.error,
      actor: d.actor,
    })),
  };
}

/**
 * Sends a test message now; 409 when no webhook is configured, 502 `notification_failed` (the receiver's
 * answer in the message and `details`) when it is not delivered. Recorded as a message and in the
 * operator action log (`notification.test`).
 */
export async function sendTestNotification(actor: Principal, db: Db = database()): Promise<TestNotificationResult> {
  const config = notifyConfig();
  if (!config) throw KeywardError.conflict("notifications_off", "no notification webhook is configured: set KEYWARD_NOTIFY_URL on the server");
  const who = actorOf(actor);
  const result = await postMessage({ kind: "test", condition: null, since: null, at: new Date(), actor: who }, config);
  await recordDelivery("test", null, result, who, db);
  await recordAction(actor, {
    action: "notification.test",
    target: { type: "notification_webhook", id: maskUrl(config.url) },
    outcome: result.ok ? "ok" : "failed",
    after: { status: result.status, error: result.error },
  }, db);
  if (!result.ok) {
    throw new KeywardError(502, "notification_failed", `the test notification was not delivered: ${result.error}`, { status: result.status, error: result.error });
  }
  return { delivered: true, status: result.status!, ms: result.ms };
}
