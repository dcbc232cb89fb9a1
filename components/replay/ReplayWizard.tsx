"use client";

import { ShieldCheck, TimerReset } from "lucide-react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useEffect, useReducer, useRef, type ReactNode } from "react";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { formatCount } from "@/components/ui/format";
import { Panel } from "@/components/ui/Panel";
import { MAX_PREFLIGHT_ITEMS, type Preflight } from "@/lib/replay/schema";
import { formatDuration } from "@/lib/sources/duration";
import { ConfirmReplay } from "./ConfirmReplay";
import { PreflightSummary } from "./PreflightSummary";
import { ReadinessChecks } from "./ReadinessChecks";
import {
  currentStep,
  describeSelection,
  needsExtend,
  preflightBody,
  preflightValidity,
  WIZARD_START,
  WIZARD_STEPS,
  wizardReducer,
  type Selection,
} from "./wizard";
import { extendPreflight, replayKeys, runPreflight } from "./queries";
import { ReplayProgress } from "./ReplayProgress";
import styles from "./replay.module.css";
import { useNow } from "./useNow";
import { clsx } from "clsx";
import formStyles from "@/components/ui/forms.module.css";
import textStyles from "@/components/ui/text.module.css";
import calloutStyles from "@/components/ui/Callout.module.css";
import { Icon } from "@/components/ui/Icon";

/**
 * The replay wizard (operators): select → preflight summary → extend (when keys expire inside the
 * window) → confirm → live progress → results. Each step sends one request; the server refuses anything
 * unsafe again (stale preflight, expiring keys not extended, a forced replay without a reason). Where it
 * is lives in one value (WizardState, changed only by wizardReducer in wizard.ts).
 */
export function ReplayWizard({
  selection,
  initial,
  onClose,
  onStarted,
  autoRun = false,
}: {
  selection: Selection;
  /** Run the preflight at once (the dead-letter page's "Replay this letter": its preflight inline). */
  autoRun?: boolean;
  /** A preflight made elsewhere (Retry failed items): the wizard opens on its summary. */
  initial?: Preflight;
  onClose: () => void;
  /** A replay was started (e.g. the page moves to its URL, /replays/{id}). */
  onStarted?: (replayId: string) => void;
}) {
  const queryClient = useQueryClient();
  const [state, dispatch] = useReducer(wizardReducer, initial, (pf) => (pf ? wizardReducer(WIZARD_START, { type: "preflighted", preflight: pf }) : WIZARD_START));
  const check = useMutation({
    mutationFn: () => runPreflight(preflightBody(selection)),
    onSuccess: (preflight) => dispatch({ type: "preflighted", preflight }),
  });
  const extend = useMutation({
    mutationFn: (id: string) => extendPreflight(id),
    onSuccess: (r) => dispatch({ type: "extended", preflight: r.preflight, extended: r.extended }),
  });
  const ran = useRef(false);
  useEffect(() => {
    if (!autoRun || ran.current || initial) return;
    ran.current = true;
    check.mutate();
  }, [autoRun, initial, check]);
  const current = currentStep(state);
  const back = (
    <button type="button" className="button" onClick={() => dispatch({ type: "back" })}>
      Back
    </button>
  );
  return (
    <Panel
      wide
      className={styles.wizard}
      title="Replay wizard"
      actions={
        <button type="button" className="button button--small" onClick={onClose}>
          {state.step === "run" ? "Close" : "Cancel replay wizard"}
        </button>
      }
    >
      <ol className={styles.steps} aria-label="Steps">
        {WIZARD_STEPS.map((s, i) => (
          <li key={s.step} aria-current={s.step === current ? "step" : undefined} className={s.step === current ? styles.currentStep : undefined}>
            {i + 1}. {s.label}
          </li>
        ))}
      </ol>

      {state.step === "select" && (
        <div>
          <p>
            Replay <strong>{describeSelection(selection)}</strong>. The preflight checks each one&apos;s dedup key first; nothing is
            sent yet.
          </p>
          {check.isError && <ErrorBox title="The preflight failed" error={check.error} />}
          <div className={formStyles.actions}>
            <button type="button" className="button button--primary" onClick={() => check.mutate()} disabled={check.isPending}>
              <Icon icon={ShieldCheck} />
              {check.isPending ? "Checking keys…" : "Run preflight"}
            </button>
          </div>
        </div>
      )}

      {(state.step === "preflight" || state.step === "extend" || state.step === "confirm") && (
        <PreflightStep
          preflight={state.preflight}
          rerun={() => check.mutate()}
          rerunning={check.isPending}
          rerunError={check.isError ? check.error : null}
        />
      )}

      {state.step === "preflight" && (
        <div className={formStyles.actions}>
          {state.preflight.counts.total > 0 && !state.preflight.ready && (
            <button type="button" className="button" onClick={() => check.mutate()} disabled={check.isPending}>
              {check.isPending ? "Checking…" : "Check again"}
            </button>
          )}
          {state.preflight.counts.total > 0 && state.preflight.ready && (
            <button type="button" className="button button--primary" onClick={() => dispatch({ type: "next" })}>
              {needsExtend(state.preflight) ? "Next: extend keys" : "Next: confirm"}
            </button>
          )}
          {back}
        </div>
      )}

      {state.step === "extend" && (
        <ExtendStep
          preflight={state.preflight}
          extended={state.extended}
          onExtend={() => extend.mutate(state.preflight.preflightId)}
          extending={extend.isPending}
          extendError={extend.isError ? extend.error : null}
          onNext={() => dispatch({ type: "next" })}
          back={back}
        />
      )}

      {state.step === "confirm" && (
        <ConfirmReplay
          preflight={state.preflight}
          onBack={() => dispatch({ type: "back" })}
          onStarted={(replayId) => {
            dispatch({ type: "started", replayId });
            void queryClient.invalidateQueries({ queryKey: replayKeys.all });
            onStarted?.(replayId);
          }}
        />
      )}

      {state.step === "run" && (
        <ReplayProgress
          replayId={state.replayId}
          embedded
          onFinished={() => dispatch({ type: "finished" })}
          onRetry={(preflight) => dispatch({ type: "retried", preflight })}
        />
      )}
    </Panel>
  );
}

/** Extending the keys that expire inside the replay window, or skipping them. */
function ExtendStep({
  preflight,
  extended,
  onExtend,
  extending,
  extendError,
  onNext,
  back,
}: {
  preflight: Preflight;
  extended: number | null;
  onExtend: () => void;
  extending: boolean;
  extendError: unknown;
  onNext: () => void;
  back: ReactNode;
}) {
  const span = formatDuration(preflight.windowSeconds);
  return (
    <div className={styles.stage} role="group" aria-label="Extend keys">
      <h3 className={textStyles.subtitle}>Extend keys</h3>
      {extended === null ? (
        <p>
          {formatCount(preflight.counts.expiring)} key{preflight.counts.expiring === 1 ? " expires" : "s expire"} before the replay
          window ({span}) ends. Extending moves the alive and expiring keys of this preflight to expire at least {span} from now,
          so a processed event stays a duplicate during the replay. Expired keys are never brought back. The change is recorded in
          the action log.
        </p>
      ) : (
        <p className={textStyles.note} aria-live="polite">
          Extended {formatCount(extended)} key{extended === 1 ? "" : "s"}. The preflight above is classified again.
        </p>
      )}
      {extendError != null && <ErrorBox title="The keys were not extended" error={extendError} />}
      <div className={formStyles.actions}>
        {extended === null ? (
          <>
            <button type="button" className="button button--primary" onClick={onExtend} disabled={extending}>
              <Icon icon={TimerReset} />
              {extending ? "Extending…" : `Extend ${formatCount(preflight.counts.expiring + preflight.counts.alive)} keys`}
            </button>
            <button type="button" className="button" onClick={onNext}>
              Skip: leave the expiring ones out
            </button>
          </>
        ) : (
          <button type="button" className="button button--primary" onClick={onNext}>
            Next: confirm
          </button>
        )}
        {back}
      </div>
    </div>
  );
}

/** The preflight summary with its countdown; once stale, only a new preflight goes on. */
function PreflightStep({
  preflight,
  rerun,
  rerunning,
  rerunError,
}: {
  preflight: Preflight;
  rerun: () => void;
  rerunning: boolean;
  rerunError: unknown;
}) {
  const now = useNow(1000);
  const validity = preflightValidity(preflight.validUntil, now);
  return (
    <>
      <p>
        Preflight of {formatCount(preflight.counts.total)} pending dead letter{preflight.counts.total === 1 ? "" : "s"} of{" "}
        <span className={textStyles.sourceName}>{preflight.source}</span>, replay window {formatDuration(preflight.windowSeconds)}:{" "}
        <span className={validity.stale ? "warn-text" : "muted"} role="timer" aria-label="Preflight validity">
          {validity.label}
        </span>
      </p>
      {validity.stale && (
        <div className={clsx(calloutStyles.callout, calloutStyles.warn)} role="alert">
          <div className={calloutStyles.title}>This preflight is stale</div>
          <p className={calloutStyles.body}>Keys may have changed since it ran; the server refuses to start from it. Run it again.</p>
          <button type="button" className="button" onClick={rerun} disabled={rerunning}>
            {rerunning ? "Checking keys…" : "Run the preflight again"}
          </button>
        </div>
      )}
      {preflight.truncated && (
        <p className={textStyles.note}>
          More pending dead letters match than one preflight takes ({formatCount(MAX_PREFLIGHT_ITEMS)}): these are the oldest failures.
          Replay them, then run the wizard again for the rest.
        </p>
      )}
      {rerunError != null && <ErrorBox title="The preflight failed" error={rerunError} />}
      {!preflight.ready && (
        <div className={clsx(calloutStyles.callout, calloutStyles.error)} role="alert" data-testid="preflight-not-ready">
          <div className={calloutStyles.title}>This replay cannot start yet</div>
          <p className={calloutStyles.body}>
            Start would refuse it: a check below fails. Each says who can fix it; then check again. Nothing was sent.
          </p>
        </div>
      )}
      <ReadinessChecks checks={preflight.checks} />
      <PreflightSummary preflight={preflight} nowMs={now} />
    </>
  );
}
