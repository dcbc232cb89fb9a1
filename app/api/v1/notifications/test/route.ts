/**
 * POST /api/v1/notifications/test — send a test message to the notification webhook now (operators):
 * 200 when the receiver answered 2xx; 409 notifications_off without KEYWARD_NOTIFY_URL; 502
 * notification_failed with the receiver's answer otherwise. Recorded in the action log.
 */
import { sendTestNotification } from "@/lib/notify/status";
import { testNotificationResultSchema } from "@/lib/notify/schema";
import { json, route } from "@/lib/http/route";

export const POST = route(async ({ principal }) => json(await sendTestNotification(principal)), {
  allow: ["operator"],
  summary: "Send a test notification",
  errors: [409, 502],
  responses: { 200: { description: "Delivered", schema: testNotificationResultSchema } },
});
