"use client";

import { CircleCheck } from "lucide-react";
import { Time } from "@/components/ui/Time";
import { EmptyState } from "@/components/ui/EmptyState";
import { Panel } from "@/components/ui/Panel";
import { Status } from "@/components/ui/Status";
import { Table } from "@/components/ui/Table";
import { conditionKindLabel, conditionState, deliveryResult, messageLabel } from "./labels";
import type { NotificationConditionRow, NotificationDeliveryRow } from "./queries";
import styles from "./notifications.module.css";

function When({ iso }: { iso: string | null }) {
  if (!iso) return <span className="muted">—</span>;
  return (
    <Time iso={iso} />
  );
}

/** The conditions the evaluator watches: firing first, then those cleared in the last 7 days. Display only. */
export function ConditionsTable({ conditions, configured }: { conditions: NotificationConditionRow[]; configured: boolean }) {
  return (
    <Panel title="Conditions">
      {conditions.length === 0 ? (
        <EmptyState title="Nothing to report" icon={CircleCheck}>
          <p>{configured ? "No replay is failing or stalled, no key is at risk, no late duplicate, pruning works." : "Conditions are watched once the webhook is on."}</p>
        </EmptyState>
      ) : (
        <Table caption="Watched conditions" columns={["Condition", "Kind", "State", "Since", "Last message"]} wrap>
          {conditions.map((c) => {
            const state = conditionState(c);
            return (
              <tr key={c.key}>
                <td className={styles.summary}>{c.summary}</td>
                <td>{conditionKindLabel(c.kind)}</td>
                <td>
                  <Status tone={state.tone}>{state.label}</Status>
                </td>
                <td>
                  <When iso={c.since} />
                </td>
                <td>
                  <When iso={c.lastSentAt} />
                </td>
              </tr>
            );
          })}
        </Table>
      )}
    </Panel>
  );
}

/** The latest messages, newest first, each with whether the receiver took it. Display only. */
export function DeliveriesTable({ deliveries }: { deliveries: NotificationDeliveryRow[] }) {
  return (
    <Panel title="Latest messages">
      {deliveries.length === 0 ? (
        <EmptyState title="No message yet">
          <p>Messages appear here as they are sent, tests included.</p>
        </EmptyState>
      ) : (
        <Table caption="Latest notification messages" columns={["Sent", "Result", "Message", "About"]} wrap>
          {deliveries.map((d) => {
            const result = deliveryResult(d);
            return (
              <tr key={d.id}>
                <td>
                  <When iso={d.at} />
                </td>
                <td>
                  <Status tone={result.tone}>{result.label}</Status>
                  {result.why && <p className={`small ${styles.why}`}>{result.why}</p>}
                </td>
                <td>{messageLabel(d.kind)}</td>
                <td className={styles.summary}>
                  {d.summary}
                  {d.actor && <span className="muted"> (by {d.actor})</span>}
                </td>
              </tr>
            );
          })}
        </Table>
      )}
    </Panel>
  );
}
