"use client";

import { useState, type ReactNode } from "react";
import confirmStyles from "./ConfirmAction.module.css";

/**
 * A button whose action needs a second, explicit click: the first shows what will happen and the
 * confirming button; Cancel (or Escape) steps back.
 */
export function ConfirmAction({
  label,
  accessibleLabel,
  prompt,
  confirmLabel,
  onConfirm,
  pending = false,
  danger = false,
}: {
  label: string;
  /** Names the object for screen readers and tests, e.g. "Revoke my-service". */
  accessibleLabel?: string;
  prompt: ReactNode;
  confirmLabel: string;
  onConfirm: () => void;
  pending?: boolean;
  danger?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button
        type="button"
        className={`button button--small${danger ? " button--danger" : ""}`}
        aria-label={accessibleLabel}
        onClick={() => setAsking(true)}
        disabled={pending}
        aria-busy={pending || undefined}
      >
        {label}
      </button>
    );
  }
  return (
    <span className={confirmStyles.confirm} role="group" aria-label={accessibleLabel} onKeyDown={(e) => e.key === "Escape" && setAsking(false)}>
      <span className={confirmStyles.prompt}>{prompt}</span>
      <button
        type="button"
        className={`button button--small${danger ? " button--danger" : " button--primary"}`}
        onClick={() => {
          onConfirm();
          setAsking(false);
        }}
        disabled={pending}
        autoFocus
      >
        {confirmLabel}
      </button>
      <button type="button" className="button button--small" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
