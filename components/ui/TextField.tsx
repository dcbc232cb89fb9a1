import type { ComponentProps, ReactNode } from "react";
import { clsx } from "clsx";
import formStyles from "./forms.module.css";

type FieldProps = {
  /** The control's id; the hint and the error get `${id}-hint` and `${id}-error`. */
  id: string;
  label: ReactNode;
  /** A line under the control: what to type, or what the value means. */
  hint?: ReactNode;
  /** Let the hint run wider than the control (a sentence rather than a few words). */
  wideHint?: boolean;
  /** A refusal for this field (shown as an alert and tied to the control). */
  error?: string;
  className?: string;
};

/** The ids a field's control points at with aria-describedby: its hint and its error, when shown. */
export function describedBy({ id, hint, error }: Pick<FieldProps, "id" | "hint" | "error">): string | undefined {
  return [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
}

/**
 * One labelled form field: label, the control (`children`), hint and error, wired together for screen
 * readers. Use TextField for a text input; pass any other control (a select, a textarea) as children
 * with `aria-describedby={describedBy(props)}`.
 */
export function Field({ id, label, hint, wideHint = false, error, className, children }: FieldProps & { children: ReactNode }) {
  return (
    <div className={clsx(formStyles.field, className)}>
      <label className={formStyles.label} htmlFor={id}>
        {label}
      </label>
      {children}
      {hint && (
        <span className={clsx(formStyles.hint, wideHint && formStyles.hintWide)} id={`${id}-hint`}>
          {hint}
        </span>
      )}
      {error && (
        <p className={formStyles.error} id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/** A labelled text input; every other prop goes to the <input> (name, value or defaultValue, type, …). */
export function TextField({
  id,
  label,
  hint,
  wideHint,
  error,
  className,
  inputClassName,
  ...input
}: FieldProps & { inputClassName?: string } & Omit<ComponentProps<"input">, "id" | "className">) {
  return (
    <Field id={id} label={label} hint={hint} wideHint={wideHint} error={error} className={className}>
      <input
        className={clsx("input", inputClassName)}
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy({ id, hint, error })}
        {...input}
      />
    </Field>
  );
}
