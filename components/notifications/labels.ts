/** What the Notifications screen says about the webhook, each condition and each message. Pure. */
import type { Tone } from "@/components/ui/Status";
import type { NotificationConditionRow, NotificationDeliveryRow, Notifications } from "./queries";

const KIND_LABELS: Record<NotificationConditionRow["kind"], string> = {
  replay_failing: "Replay failing",
  replay_stalled: "Replay stalled",
  keys_at_risk: "Keys at risk",
  late_duplicates: "Late duplicates",
  pruning_failing: "Pruning failing",
};

export const conditionKindLabel = (kind: NotificationConditionRow["kind"]) => KIND_LABELS[kind];

/** A condition's state in words and its tone: firing is an error; held back by the throttle says so. */
export function conditionState(c: NotificationConditionRow): { label: string; tone: Tone } {
  if (!c.firing) return { label: "Cleared", tone: "ok" };
  if (c.announced) return { label: "Firing, announced", tone: "error" };
  return { label: "Firing, not announced yet", tone: "error" };
}

const MESSAGE_LABELS: Record<NotificationDeliveryRow["kind"], string> = {
  firing: "Firing",
  reminder: "Still firing",
  resolved: "Resolved",
  test: "Test",
};

export const messageLabel = (kind: NotificationDeliveryRow["kind"]) => MESSAGE_LABELS[kind];

/** Whether the receiver took a message (its status), and why not. A failure is never green. */
export function deliveryResult(d: NotificationDeliveryRow): { label: string; tone: Tone; why: string | null } {
  if (d.ok) return { label: `Delivered${d.status ? ` (${d.status})` : ""}`, tone: "ok", why: null };
  return { label: d.status ? `Failed (${d.status})` : "Not delivered", tone: "error", why: d.error };
}

export const FORMAT_LABELS: Record<NonNullable<Notifications["format"]>, string> = {
  slack: "Slack-compatible incoming webhook ({\"text\": …})",
  standard: "JSON event signed per Standard Webhooks",
};

/** "every 60 s", "every 2 min", "1 h". */
export function seconds(s: number): string {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}
