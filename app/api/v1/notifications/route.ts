/**
 * GET /api/v1/notifications — the notification webhook's settings (its URL masked), the conditions it
 * watches (firing, and cleared in the last 7 days) and the latest messages sent. Callers: scope read
 * (operator implies it), and the console's signed-in users. Response: lib/notify/schema.ts.
 */
import { notificationStatus } from "@/lib/notify/status";
import { notificationStatusSchema } from "@/lib/notify/schema";
import { json, route } from "@/lib/http/route";

export const GET = route(async () => json(await notificationStatus()), {
  allow: ["read"],
  summary: "The notification webhook, its conditions and its latest messages",
  responses: { 200: { description: "Settings, conditions and messages", schema: notificationStatusSchema } },
});
