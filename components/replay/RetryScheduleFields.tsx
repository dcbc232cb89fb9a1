"use client";

import { TextField } from "@/components/ui/TextField";
import { formatDateTime } from "@/components/ui/format";
import formStyles from "@/components/ui/forms.module.css";
import calloutStyles from "@/components/ui/Callout.module.css";
import { clsx } from "clsx";
import { MAX_RETRY_ATTEMPTS, MAX_RETRY_DELAY_SECONDS, type Category, type Preflight } from "@/lib/replay/schema";
import { describeSchedule } from "./progress";
import { checkRetry, describeSpan, keyBound, RETRY_PRESETS, type RetryState } from "./retry-schedule";
import { useNow } from "./useNow";
import styles from "./replay.module.css";

/**
 * The confirm step's retry schedule: the deployment's default, a preset, or attempts / first wait / longest
 * wait typed; what it spans; and, when the included items' keys expire before its last retry, that the
 * keys bound it (those items are not retried past a minute before their key's expiry).
 */
export function RetryScheduleFields({
  preflight,
  include,
  state,
  onChange,
}: {
  preflight: Pick<Preflight, "items" | "retryDefault">;
  include: readonly Category[];
  state: RetryState;
  onChange: (s: RetryState) => void;
}) {
  const now = useNow(30_000);
  const checked = checkRetry(state, preflight.retryDefault);
  const bound = checked.ok ? keyBound(preflight, include, checked.schedule, now) : null;
  const set = (k: keyof RetryState) => (e: { target: { value: string } }) => onChange({ ...state, [k]: e.target.value });
  return (
    <fieldset className={formStyles.fieldset} aria-describedby="retry-span">
      <legend className={formStyles.label}>Retries</legend>
      {RETRY_PRESETS.map((p) => (
        <label key={p.id} className={formStyles.check}>
          <input type="radio" name="retry-preset" value={p.id} checked={state.preset === p.id} onChange={() => onChange({ ...state, preset: p.id })} />
          <span>
            {p.label}
            {p.id === "default" && <span className="muted small"> — {describeSchedule(preflight.retryDefault)}</span>}
            {"schedule" in p && <span className="muted small"> — {describeSchedule(p.schedule)}</span>}
            {p.id === "custom" && <span className="muted small"> — attempts, first wait and longest wait</span>}
          </span>
        </label>
      ))}
      {state.preset === "custom" && (
        <div className={clsx(formStyles.row, styles.retryFields)}>
          <TextField id="retry-attempts" label="Attempts" hint={`1 to ${MAX_RETRY_ATTEMPTS}`} inputClassName="input--duration" inputMode="numeric" value={state.attempts} onChange={set("attempts")} />
          <TextField id="retry-first" label="First wait (seconds)" hint="doubles after each failure" inputClassName="input--duration" inputMode="decimal" value={state.firstDelay} onChange={set("firstDelay")} />
          <TextField id="retry-max" label="Longest wait (seconds)" hint={`at most ${MAX_RETRY_DELAY_SECONDS} (a day)`} inputClassName="input--duration" inputMode="decimal" value={state.maxDelay} onChange={set("maxDelay")} />
        </div>
      )}
      <p className="muted small" id="retry-span" data-testid="retry-span">
        {checked.ok
          ? `An item that keeps failing is retried for up to ${describeSpan(checked.schedule)} in all (each wait jittered between half and all of it).`
          : checked.problems[0]}
      </p>
      {bound && (
        <div className={clsx(calloutStyles.callout, calloutStyles.warn)} role="status" data-testid="retry-key-bound">
          <div className={calloutStyles.title}>The keys&apos; remaining life bounds these retries</div>
          <p className={calloutStyles.body}>
            {bound.keys} included event{bound.keys === 1 ? "'s key expires" : "s' keys expire"} before this schedule&apos;s last retry (the soonest{" "}
            {formatDateTime(bound.soonest, true)}). A retry after its key expires is unsafe, so such an item is not retried past a minute before
            its expiry: it fails, and you can extend its key and retry the failed items. Extend the keys first, or pick a shorter schedule.
          </p>
        </div>
      )}
    </fieldset>
  );
}
