/**
 * Notifications (lib/notify): what GET /api/v1/notifications and POST /api/v1/notifications/test answer,
 * shared by the routes, the console and the tests.
 */
import { z } from "zod";
import { instant } from "@/lib/http/fields";

/** What the evaluator watches; each condition's key is `<kind>:<subject>` (the replay's id, the source). */
export const CONDITION_KINDS = ["replay_failing", "replay_stalled", "keys_at_risk", "late_duplicates", "pruning_failing"] as const;
export type ConditionKind = (typeof CONDITION_KINDS)[number];

/** What a message says: a condition began (firing), is still on (reminder), cleared (resolved); or a test. */
export const MESSAGE_KINDS = ["firing", "reminder", "resolved", "test"] as const;
export type MessageKind = (typeof MESSAGE_KINDS)[number];

export const NOTIFY_FORMATS = ["slack", "standard"] as const;
export type NotifyFormat = (typeof NOTIFY_FORMATS)[number];

export const notificationConditionSchema = z.object({
  key: z.string(),
  kind: z.enum(CONDITION_KINDS),
  source: z.string().nullable(),
  summary: z.string(),
  firing: z.boolean(),
  /** When it began firing, or when it cleared. */
  since: instant,
  /** A firing message was delivered for this firing (false while the throttle holds it back, or delivery fails). */
  announced: z.boolean(),
  lastSentAt: instant.nullable(),
});
export type NotificationCondition = z.infer<typeof notificationConditionSchema>;

export const notificationDeliverySchema = z.object({
  id: z.string(),
  at: instant,
  conditionKey: z.string().nullable(),
  kind: z.enum(MESSAGE_KINDS),
  summary: z.string(),
  /** The receiver answered 2xx. */
  ok: z.boolean(),
  status: z.number().int().nullable(),
  error: z.string().nullable(),
  actor: z.string().nullable(),
});
export type NotificationDelivery = z.infer<typeof notificationDeliverySchema>;

export const notificationStatusSchema = z.object({
  /** KEYWARD_NOTIFY_URL is set. */
  configured: z.boolean(),
  /** Where messages go, with its path and query hidden (they often hold the secret). */
  target: z.string().nullable(),
  format: z.enum(NOTIFY_FORMATS).nullable(),
  /** How often the conditions are evaluated (0: never); at most one firing message per condition per throttle. */
  intervalSeconds: z.number().int(),
  throttleSeconds: z.number().int(),
  /** Conditions firing now, then those cleared in the last 7 days. */
  conditions: z.array(notificationConditionSchema),
  /** The latest messages sent, newest first. */
  deliveries: z.array(notificationDeliverySchema),
});
export type NotificationStatus = z.infer<typeof notificationStatusSchema>;

export const testNotificationResultSchema = z.object({
  delivered: z.literal(true),
  /** The receiver's HTTP status. */
  status: z.number().int(),
  ms: z.number().nonnegative(),
});
export type TestNotificationResult = z.infer<typeof testNotificationResultSchema>;
