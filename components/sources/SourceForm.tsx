"use client";

import { useId, useState, type ChangeEvent, type FormEvent, type ReactNode } from "react";
import { Plus, Save } from "lucide-react";
import { ApiError } from "@/components/api";
import { Icon } from "@/components/ui/Icon";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { describedBy, Field, TextField } from "@/components/ui/TextField";
import { useHydrated } from "@/components/ui/useHydrated";
import { formatDuration } from "@/lib/sources/duration";
import {
  applyPreset,
  fieldErrorsFromServer,
  formParts,
  matchesPreset,
  safeDeadLetterRetention,
  type FieldErrors,
  type FormField,
  type SourceFormState,
} from "./source-form";
import { PARTS, ttlEquation } from "./describe";
import type { PresetItem } from "./queries";
import styles from "./sources.module.css";
import formStyles from "@/components/ui/forms.module.css";

type Checked<T> = { ok: true; body: T } | { ok: false; errors: FieldErrors };

/**
 * The create and edit form of a source: name (create only), a preset that fills the four parts, the
 * parts typed as durations ("3d", "1d12h"), and the optional dead-letter retention. `check` turns the
 * typed state into a request body or refusals per field (source-form.ts); the server's 422 refusals land
 * next to the same fields.
 */
export function SourceForm<Body>({
  mode,
  initial,
  presets,
  check,
  onValid,
  pending,
  serverError,
  errorTitle,
  submitLabel,
  onCancel,
  children,
  preview,
}: {
  mode: "create" | "edit";
  initial: SourceFormState;
  presets: PresetItem[] | undefined;
  check: (state: SourceFormState) => Checked<Body>;
  onValid: (body: Body, reset: () => void) => void;
  pending: boolean;
  serverError: unknown;
  errorTitle: string;
  submitLabel: string;
  onCancel?: () => void;
  /** Shown above the buttons, e.g. what a change applies to. */
  children?: ReactNode;
  /** Rendered with the typed state above `children`: the edit preview (SourcePreview). */
  preview?: (state: SourceFormState) => ReactNode;
}) {
  const id = useId();
  const hydrated = useHydrated();
  const [state, setState] = useState(initial);
  const [clientErrors, setClientErrors] = useState<FieldErrors>({});
  const serverFieldErrors = serverError instanceof ApiError ? fieldErrorsFromServer(serverError.details) : {};
  const hasServerFields = Object.keys(serverFieldErrors).length > 0;
  const errors: FieldErrors = { ...serverFieldErrors, ...clientErrors };

  const preset = presets?.find((p) => p.name === state.preset);
  const set = (field: keyof SourceFormState, value: string) => {
    setState((s) => ({ ...s, [field]: value }));
    // A refusal goes once its field is edited; the TTL and form-level ones may have changed with it.
    setClientErrors((old) => {
      const next = { ...old };
      for (const k of [field, "ttl", "form"] as const) delete next[k];
      return next;
    });
  };
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const checked = check(state);
    if (!checked.ok) {
      setClientErrors(checked.errors);
      return;
    }
    setClientErrors({});
    onValid(checked.body, () => setState(initial));
  };

  const fid = (field: string) => `${id}-${field}`;
  /** The props every text field of this form shares: id, value, change, and its refusal. */
  const textProps = (field: keyof SourceFormState & FormField) => ({
    id: fid(field),
    name: field,
    value: state[field],
    onChange: (e: ChangeEvent<HTMLInputElement>) => set(field, e.target.value),
    error: errors[field],
    autoComplete: "off",
    autoCapitalize: "none",
    spellCheck: false,
  });

  const parts = formParts(state);
  return (
    <form className={formStyles.form} method="post" onSubmit={submit} noValidate>
      {serverError != null && !hasServerFields && <ErrorBox title={errorTitle} error={serverError} />}
      {errors.form && (
        <p className={formStyles.error} role="alert">
          {errors.form}
        </p>
      )}
      <div className={styles.formRow}>
        {mode === "create" && (
          <TextField
            {...textProps("name")}
            label="Name"
            hint={
              <>
                Lowercase letters, digits, _ and -; the <code>source</code> your services claim with
              </>
            }
            placeholder="stripe-billing"
          />
        )}
        <Field
          id={fid("preset")}
          label="Preset"
          wideHint
          error={errors.preset}
          hint={
            !presets
              ? "Loading presets…"
              : !preset
                ? "A preset fills the parts with a sender's figures; you can still edit them."
                : matchesPreset(state, preset)
                  ? `Assumes ${preset.assumes}.`
                  : `The parts differ from ${preset.name}: the source is saved as custom.`
          }
        >
          <select
            className="input"
            id={fid("preset")}
            name="preset"
            value={state.preset}
            onChange={(e) => {
              setState((s) => applyPreset(s, presets?.find((p) => p.name === e.target.value)));
              setClientErrors({});
            }}
            aria-invalid={errors.preset ? true : undefined}
            aria-describedby={describedBy({ id: fid("preset"), hint: true, error: errors.preset })}
          >
            <option value="">Custom: type the four parts</option>
            {presets?.map((p) => (
              <option key={p.name} value={p.name}>
                {p.name}: {p.label}
              </option>
            ))}
          </select>
        </Field>
      </div>

      <fieldset className={formStyles.fieldset}>
        <legend className={formStyles.label}>Key lifetime: TTL = the sum of four parts</legend>
        <div className={styles.formRow}>
          {PARTS.map((p) => (
            <TextField
              key={p.field}
              {...textProps(p.field)}
              label={p.label}
              hint={p.hint}
              inputClassName="input--duration"
              placeholder="1d"
            />
          ))}
        </div>
        <p className={styles.ttl} aria-live="polite">
          TTL:{" "}
          {parts ? (
            <span className="mono">{ttlEquation(parts)}</span>
          ) : (
            <span className="muted">type the four parts as durations, e.g. 3d, 1d12h, 5m</span>
          )}
        </p>
        {errors.ttl && (
          <p className={formStyles.error} role="alert">
            {errors.ttl}
          </p>
        )}
      </fieldset>

      <TextField
        {...textProps("deadLetterRetention")}
        label={
          <>
            Dead-letter retention <span className="muted">(optional)</span>
          </>
        }
        hint={
          <>
            How long this sender&apos;s dead letters are kept; empty for none. Checked against the TTL
            {parts && <> (up to {formatDuration(safeDeadLetterRetention(parts))} is safe with these parts)</>}.
          </>
        }
        wideHint
        inputClassName="input--duration"
        placeholder="none"
      />

      {preview?.(state)}
      {children}
      <div className={formStyles.actions}>
        <button type="submit" className="button button--primary" disabled={!hydrated || pending}>
          <Icon icon={mode === "create" ? Plus : Save} />
          {pending ? "Saving…" : submitLabel}
        </button>
        {onCancel && (
          <button type="button" className="button" onClick={onCancel} disabled={pending}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}
