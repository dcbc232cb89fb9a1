"use client";

import { Check, Copy } from "lucide-react";
import { useEffect, useState } from "react";
import { Icon } from "./Icon";

/** Copies `text` to the clipboard (needs localhost or HTTPS; the text stays selectable everywhere). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  useEffect(() => {
    if (state === "idle") return;
    const t = setTimeout(() => setState("idle"), 2000);
    return () => clearTimeout(t);
  }, [state]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setState("copied");
    } catch {
      setState("failed");
    }
  };
  return (
    <button type="button" className="button button--small" onClick={copy} aria-label={label}>
      <Icon icon={state === "copied" ? Check : Copy} size="sm" />
      {state === "copied" ? "Copied" : state === "failed" ? "Select to copy" : "Copy"}
    </button>
  );
}
