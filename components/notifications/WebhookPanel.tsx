"use client";

import { Send } from "lucide-react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ApiError } from "@/components/api";
import { useCan } from "@/components/auth/SessionProvider";
import { Panel } from "@/components/ui/Panel";
import { Status } from "@/components/ui/Status";
import { FORMAT_LABELS, seconds } from "./labels";
import { notificationKeys, sendTestNotification, type Notifications } from "./queries";
import styles from "./notifications.module.css";
import { Icon } from "@/components/ui/Icon";

/** Where notifications go and how often, and (operators) "Send test notification" with what the receiver answered. */
export function WebhookPanel({ status }: { status: Notifications }) {
  const canTest = useCan("operator");
  const queryClient = useQueryClient();
  const test = useMutation({
    mutationFn: sendTestNotification,
    onSettled: () => queryClient.invalidateQueries({ queryKey: notificationKeys.all }),
  });
  // The receiver's answer (the 502's details) when there is one, else the server's message.
  const failure =
    test.error instanceof ApiError
      ? ((test.error.details as { error?: string } | undefined)?.error ?? test.error.message)
      : test.error
        ? String(test.error)
        : null;
  return (
    <Panel
      title="Webhook"
      badge={<Status tone={status.configured ? "ok" : "off"}>{status.configured ? "On" : "Off"}</Status>}
      actions={
        canTest && status.configured ? (
          <button type="button" className="button button--small" onClick={() => test.mutate()} disabled={test.isPending} aria-busy={test.isPending || undefined}>
            <Icon icon={Send} size="sm" />
            {test.isPending ? "Sending…" : "Send test notification"}
          </button>
        ) : undefined
      }
    >
      {status.configured ? (
        <dl className={styles.settings}>
          <dt>Destination</dt>
          <dd className="mono">{status.target}</dd>
          <dt>Format</dt>
          <dd>{status.format ? FORMAT_LABELS[status.format] : "—"}</dd>
          <dt>Checked</dt>
          <dd>{status.intervalSeconds > 0 ? `every ${seconds(status.intervalSeconds)}` : "never (KEYWARD_NOTIFY_INTERVAL_SECONDS=0)"}</dd>
          <dt>Throttle</dt>
          <dd>
            {status.throttleSeconds > 0
              ? `at most one firing message per condition every ${seconds(status.throttleSeconds)}; a resolved message when it clears`
              : "none: every change is sent"}
          </dd>
        </dl>
      ) : (
        <p className="muted">
          Off. Set <code>KEYWARD_NOTIFY_URL</code> on the server (a Slack-compatible incoming webhook, or any URL with{" "}
          <code>KEYWARD_NOTIFY_SECRET</code> for signed Standard Webhooks events) and restart it.
        </p>
      )}
      {test.isSuccess && (
        <p className={`${styles.result} ${styles.resultOk}`} role="status">
          Delivered: the receiver answered {test.data.status} in {test.data.ms} ms.
        </p>
      )}
      {failure && (
        <p className={`${styles.result} ${styles.resultFailed}`} role="alert">
          Not delivered: {failure}
        </p>
      )}
    </Panel>
  );
}
