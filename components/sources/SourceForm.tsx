"use client";

import { useId, useState, type FormEvent, type ReactNode } from "react";
import { ApiError } from "@/components/api";
import { ErrorBox } from "@/components/ui/ErrorBox";
import { useHydrated } from "@/components/ui/useHydrated";
import { formatDuration } from "@/lib/sources/duration";
import {
  applyPreset,
  fieldErrorsFromServer,
  formParts,
  matchesPreset,
  PARTS,
  safeDeadLetterRetention,
  ttlEquation,
  type FieldErrors,
  type FormField,
  type SourceFormState,
} from "./prepare";
import type { PresetItem } from "./queries";

type Checked<T> = { ok: true; body: T } | { ok: false; errors: FieldErrors };

/**
 * The create and edit form of a source: name (create only), a preset that fills the four parts, the
 * parts typed as durations ("3d", "1d12h"), and the optional dead-letter retention. `check` turns the
 * typed state into a request body or refusals per field (prepare.ts); the server's 422 refusals land
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
  const describedBy = (field: FormField, hint = true) =>
    [hint ? `${fid(field)}-hint` : "", errors[field] ? `${fid(field)}-error` : ""].filter(Boolean).join(" ") || undefined;
  const fieldError = (field: FormField) =>
    errors[field] && (
      <p className="inline-error" id={`${fid(field)}-error`} role="alert">
        {errors[field]}
      </p>
    );

  const parts = formParts(state);
  return (
    <form className="form source-form" method="post" onSubmit={submit} noValidate>
      {serverError != null && !hasServerFields && <ErrorBox title={errorTitle} error={serverError} />}
      {errors.form && (
        <p className="inline-error" role="alert">
          {errors.form}
        </p>
      )}
      <div className="source-form__row">
        {mode === "create" && (
          <div className="field">
            <label className="field__label" htmlFor={fid("name")}>
              Name
            </label>
            <input
              className="input"
              id={fid("name")}
              name="name"
              value={state.name}
              onChange={(e) => set("name", e.target.value)}
              autoComplete="off"
              autoCapitalize="none"
              spellCheck={false}
              placeholder="stripe-billing"
              aria-invalid={errors.name ? true : undefined}
              aria-describedby={describedBy("name")}
            />
            <span className="field__hint" id={`${fid("name")}-hint`}>
              Lowercase letters, digits, _ and -; the <code>source</code> your services claim with
            </span>
            {fieldError("name")}
          </div>
        )}
        <div className="field">
          <label className="field__label" htmlFor={fid("preset")}>
            Preset
          </label>
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
            aria-describedby={describedBy("preset")}
          >
            <option value="">Custom: type the four parts</option>
            {presets?.map((p) => (
              <option key={p.name} value={p.name}>
                {p.name}: {p.label}
              </option>
            ))}
          </select>
          <span className="field__hint field__hint--wide" id={`${fid("preset")}-hint`}>
            {!presets
              ? "Loading presets…"
              : !preset
                ? "A preset fills the parts with a sender's figures; you can still edit them."
                : matchesPreset(state, preset)
                  ? `Assumes ${preset.assumes}.`
                  : `The parts differ from ${preset.name}: the source is saved as custom.`}
          </span>
          {fieldError("preset")}
        </div>
      </div>

      <fieldset className="fieldset">
        <legend className="field__label">Key lifetime: TTL = the sum of four parts</legend>
        <div className="source-form__row">
          {PARTS.map((p) => (
            <div className="field field--duration" key={p.field}>
              <label className="field__label" htmlFor={fid(p.field)}>
                {p.label}
              </label>
              <input
                className="input input--duration"
                id={fid(p.field)}
                name={p.field}
                value={state[p.field]}
                onChange={(e) => set(p.field, e.target.value)}
                autoComplete="off"
                autoCapitalize="none"
                spellCheck={false}
                placeholder="1d"
                aria-invalid={errors[p.field] ? true : undefined}
                aria-describedby={describedBy(p.field)}
              />
              <span className="field__hint" id={`${fid(p.field)}-hint`}>
                {p.hint}
              </span>
              {fieldError(p.field)}
            </div>
          ))}
        </div>
        <p className="source-form__ttl" aria-live="polite">
          TTL:{" "}
          {parts ? (
            <span className="mono">{ttlEquation(parts)}</span>
          ) : (
            <span className="muted">type the four parts as durations, e.g. 3d, 1d12h, 5m</span>
          )}
        </p>
        {fieldError("ttl")}
      </fieldset>

      <div className="field">
        <label className="field__label" htmlFor={fid("deadLetterRetention")}>
          Dead-letter retention <span className="muted">(optional)</span>
        </label>
        <input
          className="input input--duration"
          id={fid("deadLetterRetention")}
          name="deadLetterRetention"
          value={state.deadLetterRetention}
          onChange={(e) => set("deadLetterRetention", e.target.value)}
          autoComplete="off"
          autoCapitalize="none"
          spellCheck={false}
          placeholder="none"
          aria-invalid={errors.deadLetterRetention ? true : undefined}
          aria-describedby={describedBy("deadLetterRetention")}
        />
        <span className="field__hint field__hint--wide" id={`${fid("deadLetterRetention")}-hint`}>
          How long this sender&apos;s dead letters are kept; empty for none. Checked against the TTL
          {parts && <> (up to {formatDuration(safeDeadLetterRetention(parts))} is safe with these parts)</>}.
        </span>
        {fieldError("deadLetterRetention")}
      </div>

      {preview?.(state)}
      {children}
      <div className="form__actions">
        <button type="submit" className="button button--primary" disabled={!hydrated || pending}>
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
