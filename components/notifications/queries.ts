/** Client side of notifications (app/api/v1/notifications): query keys, the status query, the test message. */
import { queryOptions } from "@tanstack/react-query";
import { api, retryUnlessClientError, type AsJson } from "@/components/api";
import type { NotificationStatus, TestNotificationResult } from "@/lib/notify/schema";

export type Notifications = AsJson<NotificationStatus>;
export type NotificationConditionRow = Notifications["conditions"][number];
export type NotificationDeliveryRow = Notifications["deliveries"][number];

export const notificationKeys = {
  all: ["notifications"] as const,
  status: () => [...notificationKeys.all, "status"] as const,
};

export function notificationsQuery() {
  return queryOptions({
    queryKey: notificationKeys.status(),
    queryFn: ({ signal }) => api<Notifications>("/api/v1/notifications", { signal }),
    retry: retryUnlessClientError,
    refetchInterval: 30_000,
  });
}

/** Sends a test message; rejects with the server's 502 notification_failed (the receiver's answer) or 409. */
export function sendTestNotification() {
  return api<TestNotificationResult>("/api/v1/notifications/test", { method: "POST" });
}
