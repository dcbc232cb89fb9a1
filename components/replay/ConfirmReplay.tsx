"use client";

import { Play } from "lucide-react";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState, type FormEvent } from "react";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { Field, TextField } from "@/components/ui/TextField";
import { formatCount } from "@/components/ui/format";
import { CATEGORIES, CATEGORY_INFO } from "./categories";
import { checkConfirm, confirmPhrase, defaultInclude, idempotencyKeyFor, includable, type ReplayBody } from "./wizard";
import { newIdempotencyKey, startReplay } from "./queries";
import { checkRetry, type RetryState } from "./retry-schedule";
import { RetryScheduleFields } from "./RetryScheduleFields";
import styles from "./replay.module.css";
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_RATE_PER_SECOND,
  MAX_CONCURRENCY,
  MAX_RATE_PER_SECOND,
  MIN_FORCE_REASON,
  type Category,
  type Preflight,
} from "@/lib/replay/schema";
import textStyles from "@/components/ui/text.module.css";
import formStyles from "@/components/ui/forms.module.css";
import { clsx } from "clsx";
import { Icon } from "@/components/ui/Icon";

/**
 * The confirm step: which categories to include (expired_processed only with a reason and the source's
 * name typed), the rate and concurrency, and the count typed to confirm. Start sends one Idempotency-Key per body, so a
 * double click or a retry starts one replay.
 */
export function ConfirmReplay({
  preflight,
  onBack,
  onStarted,
}: {
  preflight: Preflight;
  onBack: () => void;
  onStarted: (replayId: string) => void;
}) {
  const [include, setInclude] = useState<Category[]>(() => defaultInclude(preflight));
  const [reason, setReason] = useState("");
  const [typed, setTyped] = useState("");
  const [rate, setRate] = useState(String(DEFAULT_RATE_PER_SECOND));
  const [concurrency, setConcurrency] = useState(String(DEFAULT_CONCURRENCY));
  const [retry, setRetry] = useState<RetryState>(() => ({
    preset: "default",
    attempts: String(preflight.retryDefault.maxAttempts),
    firstDelay: String(preflight.retryDefault.initialDelaySeconds),
    maxDelay: String(preflight.retryDefault.maxDelaySeconds),
  }));
  const [showProblems, setShowProblems] = useState(false);
  const sent = useRef<{ key: string; body: string } | null>(null);
  const start = useMutation({
    mutationFn: ({ body, key }: { body: ReplayBody; key: string }) => startReplay(body, key),
    onSuccess: (r) => onStarted(r.replayId),
  });
  const form = checkConfirm(preflight, { include, reason, typed, rate, concurrency });
  const retryChecked = checkRetry(retry, preflight.retryDefault);
  // The form and its retry schedule: one body, or every problem of both.
  const checked: { ok: true; body: ReplayBody; count: number } | { ok: false; problems: string[]; count: number } =
    form.ok && retryChecked.ok
      ? { ...form, body: { ...form.body, ...(retryChecked.body ? { retry: retryChecked.body } : {}) } }
      : { ok: false, count: form.count, problems: [...(form.ok ? [] : form.problems), ...(retryChecked.ok ? [] : retryChecked.problems)] };
  const forced = include.includes("expired_processed");
  const phrase = confirmPhrase(preflight.source, checked.count, forced);
  const toggle = (c: Category) => setInclude((old) => (old.includes(c) ? old.filter((x) => x !== c) : [...old, c]));
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    if (!checked.ok) return setShowProblems(true);
    if (start.isPending) return;
    sent.current = idempotencyKeyFor(sent.current, checked.body, newIdempotencyKey);
    start.mutate({ body: checked.body, key: sent.current.key });
  };
  return (
    <form className={clsx(formStyles.form, styles.stage)} onSubmit={submit} noValidate aria-label="Confirm the replay">
      <h3 className={textStyles.subtitle}>Confirm</h3>
      <fieldset className={formStyles.fieldset}>
        <legend className={formStyles.label}>Include</legend>
        {CATEGORIES.map((c) => {
          const info = CATEGORY_INFO[c];
          const count = preflight.counts[c];
          const allowed = includable(c, preflight);
          const why =
            c === "in_flight"
              ? "never replayed while a handler holds it"
              : count === 0
                ? "none in this preflight"
                : c === "expiring" && !allowed
                  ? "extend the keys first"
                  : c === "expired_processed"
                    ? "would process these twice: needs a reason"
                    : null;
          return (
            <label key={c} className={formStyles.check}>
              <input type="checkbox" checked={include.includes(c)} disabled={!allowed} onChange={() => toggle(c)} />
              <span>
                {info.label} ({formatCount(count)}){why && <span className="muted small"> — {why}</span>}
              </span>
            </label>
          );
        })}
      </fieldset>
      {forced && (
        <Field
          id="force-reason"
          label="Reason for forcing"
          wideHint
          hint={
            <>
              At least {MIN_FORCE_REASON} characters; recorded with the replay in the action log. These{" "}
              {formatCount(preflight.counts.expired_processed)} events were processed before and their keys are gone: the handler
              will process them again.
            </>
          }
        >
          <textarea
            className="input input--wide"
            id="force-reason"
            rows={2}
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            aria-describedby="force-reason-hint"
          />
        </Field>
      )}
      <TextField
        id="replay-rate"
        label="Rate (events per second)"
        hint={`1 to ${MAX_RATE_PER_SECOND}; default ${DEFAULT_RATE_PER_SECOND}`}
        inputClassName="input--duration"
        inputMode="numeric"
        value={rate}
        onChange={(e) => setRate(e.target.value)}
      />
      <TextField
        id="replay-concurrency"
        label="Concurrency (deliveries at a time)"
        hint={`1 to ${MAX_CONCURRENCY}; default ${DEFAULT_CONCURRENCY}. A slow destination needs more to reach the rate.`}
        inputClassName="input--duration"
        inputMode="numeric"
        value={concurrency}
        onChange={(e) => setConcurrency(e.target.value)}
      />
      <RetryScheduleFields preflight={preflight} include={include} state={retry} onChange={setRetry} />
      <TextField
        id="replay-confirm"
        label={forced ? "Type the source name to confirm" : "Type the number of events to confirm"}
        wideHint
        hint={
          forced ? (
            <>
              A forced replay: type <strong className={textStyles.sourceName}>{phrase}</strong>
            </>
          ) : (
            <>
              Type <strong>{phrase}</strong>: the number of events this replay sends
            </>
          )
        }
        value={typed}
        onChange={(e) => setTyped(e.target.value)}
        autoComplete="off"
        spellCheck={false}
      />
      {showProblems && !checked.ok && (
        <ul className={formStyles.error} role="alert">
          {checked.problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      {start.isError && (
        <ErrorBox title="The replay did not start" error={start.error}>
          {start.error instanceof Error && "code" in start.error && start.error.code === "preflight_stale" && (
            <p>The preflight is older than 15 minutes: go back and run it again.</p>
          )}
        </ErrorBox>
      )}
      <div className={formStyles.actions}>
        <button type="submit" className="button button--primary" disabled={start.isPending || !checked.ok} aria-busy={start.isPending || undefined}>
          <Icon icon={Play} />
          {start.isPending ? "Starting…" : `Start replay of ${formatCount(checked.count)} event${checked.count === 1 ? "" : "s"}`}
        </button>
        <button type="button" className="button" onClick={onBack} disabled={start.isPending}>
          Back
        </button>
      </div>
      {!checked.ok && (
        <p className="muted small" aria-live="polite">
          {checked.problems[0]}
        </p>
      )}
    </form>
  );
}
