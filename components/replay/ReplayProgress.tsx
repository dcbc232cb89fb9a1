"use client";

import { Pause, Play } from "lucide-react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useId, useRef } from "react";
import { useCan } from "@/components/auth/SessionProvider";
import { ConfirmAction } from "@/components/ui/ConfirmAction";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { Panel } from "@/components/ui/Panel";
import { QueryView } from "@/components/ui/QueryView";
import { formatCount, formatDateTime } from "@/components/ui/format";
import { describeSchedule, isFinished, outcomeRows, replayControls, replayHeadline, replayProgress } from "./progress";
import { WaitingItems } from "./WaitingItems";
import { controlReplay, replayKeys, replayQuery, type ReplayControl } from "./queries";
import { ReplayResults } from "./ReplayResults";
import { HealthBadge, HealthDetail } from "./ReplayHealth";
import { OutcomeBadge } from "./OutcomeBadge";
import { describeOutcome } from "@/lib/replay/outcome";
import type { Preflight } from "@/lib/replay/schema";
import { retryFailedItems } from "./queries";
import styles from "./replay.module.css";
import tableStyles from "@/components/ui/Table.module.css";
import panelStyles from "@/components/ui/Panel.module.css";
import textStyles from "@/components/ui/text.module.css";
import { clsx } from "clsx";
import listStyles from "@/components/ui/DetailList.module.css";
import { Icon } from "@/components/ui/Icon";
import { Status } from "@/components/ui/Status";

// A finished replay's colour is its outcome's (a completed replay where everything failed is red), so its status is neutral.
const STATUS_TONE = { running: "ok", paused: "warn", cancelled: "off", completed: "off" } as const;

/**
 * One replay: live progress (polled every second while it runs), counts by outcome, pause / resume /
 * cancel for operators, and the results once it finished. `embedded` inside the wizard; otherwise its own
 * panel with a Close button.
 */
export function ReplayProgress({
  replayId,
  embedded = false,
  onClose,
  onFinished,
  onRetry,
}: {
  replayId: string;
  embedded?: boolean;
  onClose?: () => void;
  onFinished?: () => void;
  /** "Retry failed items": the new preflight of this replay's failures, to open in the wizard (operators). */
  onRetry?: (preflight: Preflight) => void;
}) {
  const canOperate = useCan("operator");
  const queryClient = useQueryClient();
  const query = useQuery(replayQuery(replayId));
  const { data, error, isError } = query;
  const control = useMutation({
    mutationFn: (action: ReplayControl) => controlReplay(replayId, action),
    onSettled: () => queryClient.invalidateQueries({ queryKey: replayKeys.all }),
  });
  const retry = useMutation({
    mutationFn: () => retryFailedItems(replayId),
    onSuccess: (preflight) => onRetry?.(preflight),
  });
  const finished = data ? isFinished(data.status) : false;
  const onFinishedRef = useRef(onFinished);
  useEffect(() => {
    onFinishedRef.current = onFinished;
  });
  const reported = useRef(false);
  useEffect(() => {
    if (!finished || reported.current) return;
    reported.current = true;
    onFinishedRef.current?.();
    // The dead letters' statuses and the replays list changed with the replay (this replay's own query is left alone).
    void queryClient.invalidateQueries({ queryKey: [...replayKeys.all, "dead-letters"] });
    void queryClient.invalidateQueries({ queryKey: replayKeys.keyRisk(undefined).slice(0, 2) });
    void queryClient.invalidateQueries({ queryKey: replayKeys.replays() });
  }, [finished, queryClient]);

  const title = data && isFinished(data.status) ? "Results" : "Progress";
  // useId, not the replay id: the same replay may be on screen twice (in the wizard and opened from the list).
  const titleId = useId();
  const badge = data && (
    <>
      <Status tone={STATUS_TONE[data.status]}>{data.status}</Status>{" "}
      {data.outcome ? <OutcomeBadge outcome={data.outcome} title={describeOutcome(data.outcome, data)} /> : <HealthBadge health={data.health} />}
    </>
  );
  const content = (
    <QueryView query={query} loading="Loading the replay…" errorTitle="The replay could not be loaded">
      {(data) => (
        <>
          {isError && (
            <p className="warn-text" role="status">
              Progress may be out of date: the last update failed ({(error as Error).message}). Retrying…
            </p>
          )}
          <ProgressBar done={replayProgress(data).done} total={data.total} percent={replayProgress(data).percent} />
          <p aria-live="polite">{replayHeadline(data)}</p>
          <HealthDetail health={data.health} />
          {!finished && <WaitingItems replay={data} canOperate={canOperate} />}
          {data.destination && (
            <p className="small" data-testid="replay-destination">
              {finished ? "Sent to" : "Sending to"} <span className="mono">{data.destination}</span>
              {!finished && <span className="muted"> (the source&apos;s destination, read at each batch)</span>}
            </p>
          )}
          <dl className={clsx(listStyles.list, styles.outcomes)}>
            {outcomeRows(data.counts).map((o) => (
              <div key={o.outcome}>
                <dt>{o.label}</dt>
                <dd className={tableStyles.strong} data-outcome={o.outcome}>
                  {formatCount(o.count)}
                </dd>
              </div>
            ))}
          </dl>
          <p className="muted small">
            Started {formatDateTime(data.createdAt, true)} by {data.createdBy} · {data.ratePerSecond}/s · includes{" "}
            {data.include.join(", ")} · retries: <span data-testid="retry-schedule">{describeSchedule(data.retry)}</span>
            {data.forced && <span className="warn-text"> · forced: {data.forceReason}</span>}
            {data.finishedAt && <> · finished {formatDateTime(data.finishedAt, true)}</>}
          </p>
          {canOperate && !finished && <Controls status={data.status} onAction={(a) => control.mutate(a)} pending={control.isPending} />}
          {control.isError && <ErrorBox title="The replay did not change" error={control.error} />}
          {canOperate && finished && onRetry && data.counts.failed + data.counts.skipped_unsafe > 0 && (
            <div className={tableStyles.rowActions}>
              <button type="button" className="button button--small" onClick={() => retry.mutate()} disabled={retry.isPending}>
                {retry.isPending ? "Checking keys…" : "Retry failed items"}
              </button>
            </div>
          )}
          {retry.isError && <ErrorBox title="The failed items could not be retried" error={retry.error} />}
          {finished && <ReplayResults replay={data} />}
        </>
      )}
    </QueryView>
  );
  if (embedded) {
    return (
      <div className={styles.stage} role="group" aria-labelledby={titleId}>
        <header className={panelStyles.header}>
          <h3 className={textStyles.subtitle} id={titleId}>
            {title}
          </h3>
          {badge}
        </header>
        {content}
      </div>
    );
  }
  return (
    <Panel
      wide
      level={3}
      title={`Replay ${data ? `of ${data.source}` : ""}: ${title.toLowerCase()}`}
      titleId={titleId}
      badge={badge}
      actions={
        onClose && (
          <button type="button" className="button button--small" onClick={onClose}>
            Close
          </button>
        )
      }
    >
      {content}
    </Panel>
  );
}

function ProgressBar({ done, total, percent }: { done: number; total: number; percent: number }) {
  return (
    <div className={styles.progress}>
      <progress className={styles.progressBar} max={100} value={percent} aria-label="Replay progress" aria-valuetext={`${done} of ${total} settled`} />
      <span className={styles.progressLabel}>{percent}%</span>
    </div>
  );
}

function Controls({ status, onAction, pending }: { status: Parameters<typeof replayControls>[0]; onAction: (a: ReplayControl) => void; pending: boolean }) {
  const can = replayControls(status);
  return (
    <div className={tableStyles.rowActions}>
      {can.pause && (
        <button type="button" className="button button--small" onClick={() => onAction("pause")} disabled={pending}>
          <Icon icon={Pause} size="sm" />
          Pause
        </button>
      )}
      {can.resume && (
        <button type="button" className="button button--small" onClick={() => onAction("resume")} disabled={pending}>
          <Icon icon={Play} size="sm" />
          Resume
        </button>
      )}
      {can.cancel && (
        <ConfirmAction
          label="Cancel replay"
          prompt="Items not sent yet are cancelled; the ones already delivered stay delivered."
          confirmLabel="Cancel the remaining items"
          onConfirm={() => onAction("cancel")}
          pending={pending}
          danger
        />
      )}
    </div>
  );
}
