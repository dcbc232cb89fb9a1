"use client";

import type { ReactNode } from "react";
import { clsx } from "clsx";
import { CircleAlert, RotateCcw } from "lucide-react";
import calloutStyles from "./Callout.module.css";
import { Icon } from "./Icon";

type ErrorLike = { message?: unknown; code?: unknown; status?: unknown };

/**
 * The one error state: what failed, the server's error code and message when it sent the error body, and a
 * way to retry (QueryView passes one; a form's refusal has none, its fields say what to change).
 */
export function ErrorBox({
  title,
  error,
  onRetry,
  retrying = false,
  children,
}: {
  title: string;
  error: unknown;
  onRetry?: () => void;
  retrying?: boolean;
  /** Extra guidance, e.g. what usually causes this error. */
  children?: ReactNode;
}) {
  const e = (error ?? {}) as ErrorLike;
  const message = typeof e.message === "string" && e.message ? e.message : "unknown error";
  const code = typeof e.code === "string" ? e.code : undefined;
  const status = typeof e.status === "number" && e.status > 0 ? e.status : undefined;
  return (
    <div className={clsx(calloutStyles.callout, calloutStyles.error)} role="alert">
      <div className={calloutStyles.title}>
        <Icon icon={CircleAlert} />
        {title}
      </div>
      <p className={calloutStyles.body}>
        {message}
        {(code || status) && (
          <span className="muted">
            {" "}
            ({[status, code].filter(Boolean).join(" ")})
          </span>
        )}
      </p>
      {children}
      {onRetry && (
        <button type="button" className="button" onClick={onRetry} disabled={retrying}>
          <Icon icon={RotateCcw} size="sm" />
          {retrying ? "Retrying…" : "Retry now"}
        </button>
      )}
    </div>
  );
}
