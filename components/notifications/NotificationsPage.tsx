"use client";

import { useQuery } from "@tanstack/react-query";
import { PageHeader } from "@/components/ui/PageHeader";
import { QueryView } from "@/components/ui/QueryView";
import { ConditionsTable, DeliveriesTable } from "./NotificationTables";
import { WebhookPanel } from "./WebhookPanel";
import { notificationsQuery } from "./queries";

/**
 * The Notifications screen: the webhook's settings and a test message (operators), the conditions it
 * watches, and the latest messages with whether each was delivered.
 */
export function NotificationsPage() {
  const query = useQuery(notificationsQuery());
  return (
    <>
      <PageHeader
        title="Notifications"
        description="A webhook told when a replay fails or stalls, keys are at risk, late duplicates appear or pruning fails, and again when each clears."
      />
      <QueryView query={query} loading="Loading the notification settings…" errorTitle="The notification settings could not be loaded">
        {(data) => (
          <>
            <WebhookPanel status={data} />
            <ConditionsTable conditions={data.conditions} configured={data.configured} />
            <DeliveriesTable deliveries={data.deliveries} />
          </>
        )}
      </QueryView>
    </>
  );
}
