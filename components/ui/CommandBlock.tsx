"use client";

import { useState } from "react";

/** A shell command to run, with a copy button (clipboard access needs localhost or HTTPS; selecting works everywhere). */
export function CommandBlock({ command }: { command: string }) {
  const [copied, setCopied] = useState<"idle" | "copied" | "failed">("idle");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(command);
      setCopied("copied");
    } catch {
      setCopied("failed");
    }
    setTimeout(() => setCopied("idle"), 2000);
  };
  return (
    <div className="command">
      <pre className="command__text">
        <code>{command}</code>
      </pre>
      <button type="button" className="button button--small" onClick={copy} aria-label={`Copy: ${command}`}>
        {copied === "copied" ? "Copied" : copied === "failed" ? "Select to copy" : "Copy"}
      </button>
    </div>
  );
}
