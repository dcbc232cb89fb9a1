"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { EventLink } from "@/components/ui/EventLink";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { formatCount, formatDateTime } from "@/components/ui/format";
import { Table } from "@/components/ui/Table";
import type { Replay } from "@/lib/replay/schema";
import { describeWait } from "./progress";
import { replayKeys, retryItemNow } from "./queries";
import { useNow } from "./useNow";
import styles from "./replay.module.css";
import tableStyles from "@/components/ui/Table.module.css";
import textStyles from "@/components/ui/text.module.css";
import { clsx } from "clsx";

/**
 * A running replay's items waiting for their retry, soonest first: attempts so far, the last answer, and
 * when the next attempt is due (relative, the exact time on hover); "Retry now" for operators.
 */
export function WaitingItems({ replay, canOperate }: { replay: Replay; canOperate: boolean }) {
  const queryClient = useQueryClient();
  const now = useNow(1000);
  const retry = useMutation({
    mutationFn: (deadLetterId: string) => retryItemNow(replay.id, deadLetterId),
    onSettled: () => queryClient.invalidateQueries({ queryKey: replayKeys.replay(replay.id) }),
  });
  if (replay.waiting.length === 0) return null;
  return (
    <section aria-label="Waiting for retry">
      <Table
        caption={<>Waiting for retry ({formatCount(replay.waiting.length)})</>}
        captionClassName={clsx(textStyles.subtitle, styles.caption)}
        columns={["Event", { label: "Attempts", num: true }, "Last answer", "Next attempt", ...(canOperate ? [{ label: "Action", hideLabel: true }] : [])]}
        wrap
      >
        {replay.waiting.map((i) => (
          <tr key={i.deadLetterId} data-testid="waiting-item">
            <td>
              <EventLink source={replay.source} eventId={i.eventId} />
            </td>
            <td className={tableStyles.num}>
              {i.attempts} of {replay.retry.maxAttempts}
            </td>
            <td className="mono small">{i.lastError ?? (i.lastStatus !== null ? `HTTP ${i.lastStatus}` : "")}</td>
            <td className={tableStyles.nowrap}>
              {i.nextAttemptAt && (
                <time dateTime={i.nextAttemptAt} title={formatDateTime(i.nextAttemptAt, true)} data-testid="next-attempt">
                  {describeWait(i.nextAttemptAt, now)}
                </time>
              )}
            </td>
            {canOperate && (
              <td className={tableStyles.actionsCell}>
                <button
                  type="button"
                  className="button button--small"
                  onClick={() => retry.mutate(i.deadLetterId)}
                  disabled={retry.isPending}
                  aria-label={`Retry now ${i.eventId}`}
                >
                  Retry now
                </button>
              </td>
            )}
          </tr>
        ))}
      </Table>
      {retry.isError && <ErrorBox title="The item was not retried" error={retry.error} />}
    </section>
  );
}
