"use client";

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { formatCount } from "@/components/ui/format";
import { formatDuration } from "@/lib/sources/duration";
import { ConfirmReplay } from "./ConfirmReplay";
import { PreflightSummary } from "./PreflightSummary";
import { describeSelection, needsExtend, preflightBody, preflightValidity, type Selection } from "./prepare";
import { extendPreflight, replayKeys, runPreflight } from "./queries";
import { ReplayProgress } from "./ReplayProgress";
import { MAX_PREFLIGHT_ITEMS, type Preflight } from "@/lib/replay/schema";
import { useNow } from "./useNow";

type Step = "select" | "preflight" | "extend" | "confirm" | "run";

const STEPS: { step: Step | "results"; label: string }[] = [
  { step: "select", label: "Select" },
  { step: "preflight", label: "Preflight" },
  { step: "extend", label: "Extend" },
  { step: "confirm", label: "Confirm" },
  { step: "run", label: "Progress" },
  { step: "results", label: "Results" },
];

/**
 * The replay wizard (operators): select → preflight summary → extend (when keys expire inside the
 * window) → confirm → live progress → results. Each step sends one request; the server refuses anything
 * unsafe again (stale preflight, expiring keys not extended, a forced replay without a reason).
 */
export function ReplayWizard({ selection, onClose }: { selection: Selection; onClose: () => void }) {
  const queryClient = useQueryClient();
  const [step, setStep] = useState<Step>("select");
  const [preflight, setPreflight] = useState<Preflight | null>(null);
  const [extended, setExtended] = useState<number | null>(null);
  const [replayId, setReplayId] = useState<string | null>(null);
  const [finished, setFinished] = useState(false);
  const check = useMutation({
    mutationFn: () => runPreflight(preflightBody(selection)),
    onSuccess: (p) => {
      setPreflight(p);
      setExtended(null);
      setStep("preflight");
    },
  });
  const extend = useMutation({
    mutationFn: (id: string) => extendPreflight(id),
    onSuccess: (r) => {
      setPreflight(r.preflight);
      setExtended(r.extended);
    },
  });
  const current = step === "run" && finished ? "results" : step;
  return (
    <section className="panel panel--form wizard" aria-labelledby="wizard-title">
      <header className="source-card__header">
        <h2 className="section-title section-title--flush" id="wizard-title">
          Replay wizard
        </h2>
        <button type="button" className="button button--small wizard__close" onClick={onClose}>
          {step === "run" ? "Close" : "Cancel replay wizard"}
        </button>
      </header>
      <ol className="wizard__steps" aria-label="Steps">
        {STEPS.map((s, i) => (
          <li key={s.step} aria-current={s.step === current ? "step" : undefined} className={s.step === current ? "wizard__step--current" : undefined}>
            {i + 1}. {s.label}
          </li>
        ))}
      </ol>

      {step === "select" && (
        <div>
          <p>
            Replay <strong>{describeSelection(selection)}</strong>. The preflight checks each one&apos;s dedup key first; nothing is
            sent yet.
          </p>
          {check.isError && <ErrorBox title="The preflight failed" error={check.error} />}
          <div className="form__actions">
            <button type="button" className="button button--primary" onClick={() => check.mutate()} disabled={check.isPending}>
              {check.isPending ? "Checking keys…" : "Run preflight"}
            </button>
          </div>
        </div>
      )}

      {step !== "select" && step !== "run" && preflight && (
        <PreflightStep
          preflight={preflight}
          rerun={() => check.mutate()}
          rerunning={check.isPending}
          rerunError={check.isError ? check.error : null}
        />
      )}

      {step === "preflight" && preflight && (
        <div className="form__actions">
          {preflight.counts.total > 0 && (
            <button type="button" className="button button--primary" onClick={() => setStep(needsExtend(preflight) ? "extend" : "confirm")}>
              {needsExtend(preflight) ? "Next: extend keys" : "Next: confirm"}
            </button>
          )}
          <button type="button" className="button" onClick={() => setStep("select")}>
            Back
          </button>
        </div>
      )}

      {step === "extend" && preflight && (
        <div className="wizard__stage" role="group" aria-label="Extend keys">
          <h3 className="source-card__subtitle">Extend keys</h3>
          {extended === null ? (
            <p>
              {formatCount(preflight.counts.expiring)} key{preflight.counts.expiring === 1 ? " expires" : "s expire"} before the replay
              window ({formatDuration(preflight.windowSeconds)}) ends. Extending moves the alive and expiring keys of this preflight to
              expire at least {formatDuration(preflight.windowSeconds)} from now, so a processed event stays a duplicate during the
              replay. Expired keys are never brought back. The change is recorded in the action log.
            </p>
          ) : (
            <p className="note" aria-live="polite">
              Extended {formatCount(extended)} key{extended === 1 ? "" : "s"}. The preflight above is classified again.
            </p>
          )}
          {extend.isError && <ErrorBox title="The keys were not extended" error={extend.error} />}
          <div className="form__actions">
            {extended === null ? (
              <>
                <button
                  type="button"
                  className="button button--primary"
                  onClick={() => extend.mutate(preflight.preflightId)}
                  disabled={extend.isPending}
                >
                  {extend.isPending ? "Extending…" : `Extend ${formatCount(preflight.counts.expiring + preflight.counts.alive)} keys`}
                </button>
                <button type="button" className="button" onClick={() => setStep("confirm")}>
                  Skip: leave the expiring ones out
                </button>
              </>
            ) : (
              <button type="button" className="button button--primary" onClick={() => setStep("confirm")}>
                Next: confirm
              </button>
            )}
            <button type="button" className="button" onClick={() => setStep("preflight")}>
              Back
            </button>
          </div>
        </div>
      )}

      {step === "confirm" && preflight && (
        <ConfirmReplay
          preflight={preflight}
          onBack={() => setStep(needsExtend(preflight) || extended !== null ? "extend" : "preflight")}
          onStarted={(id) => {
            setReplayId(id);
            setStep("run");
            void queryClient.invalidateQueries({ queryKey: replayKeys.all });
          }}
        />
      )}

      {step === "run" && replayId && <ReplayProgress replayId={replayId} embedded onFinished={() => setFinished(true)} />}
    </section>
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
      <p className="wizard__validity">
        Preflight of {formatCount(preflight.counts.total)} pending dead letter{preflight.counts.total === 1 ? "" : "s"} of{" "}
        <span className="source-name">{preflight.source}</span>, replay window {formatDuration(preflight.windowSeconds)}:{" "}
        <span className={validity.stale ? "warn-text" : "muted"} role="timer" aria-label="Preflight validity">
          {validity.label}
        </span>
      </p>
      {validity.stale && (
        <div className="callout callout--warn" role="alert">
          <div className="callout__title">This preflight is stale</div>
          <p className="callout__body">Keys may have changed since it ran; the server refuses to start from it. Run it again.</p>
          <button type="button" className="button" onClick={rerun} disabled={rerunning}>
            {rerunning ? "Checking keys…" : "Run the preflight again"}
          </button>
        </div>
      )}
      {preflight.truncated && (
        <p className="note">
          More pending dead letters match than one preflight takes ({formatCount(MAX_PREFLIGHT_ITEMS)}): these are the oldest failures.
          Replay them, then run the wizard again for the rest.
        </p>
      )}
      {rerunError != null && <ErrorBox title="The preflight failed" error={rerunError} />}
      <PreflightSummary preflight={preflight} nowMs={now} />
    </>
  );
}
