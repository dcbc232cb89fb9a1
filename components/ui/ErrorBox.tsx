"use client";

import type { ReactNode } from "react";

type ErrorLike = { message?: unknown; code?: unknown; status?: unknown };

/** What failed, the server's error code and message when it sent the error body, and a way to retry. */
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
    <div className="callout callout--error" role="alert">
      <div className="callout__title">{title}</div>
      <p className="callout__body">
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
          {retrying ? "Retrying…" : "Retry now"}
        </button>
      )}
    </div>
  );
}
