"use client";

import { Check, Link2 } from "lucide-react";
import { useEffect, useState, useSyncExternalStore } from "react";
import { Icon } from "./Icon";

const noSubscription = () => () => {};

/**
 * Copies the absolute URL of `path` (this console's origin + path) to the clipboard; its accessible name
 * starts with its visible label ("Copy link …"). The origin is the browser's (empty in the server render, which does not know it).
 */
export function CopyLinkButton({ path, label }: { path: string; label: string }) {
  const origin = useSyncExternalStore(noSubscription, () => window.location.origin, () => ""); // "" while rendered on the server
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  useEffect(() => {
    if (state === "idle") return;
    const t = setTimeout(() => setState("idle"), 2000);
    return () => clearTimeout(t);
  }, [state]);
  const url = origin + path;
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(url);
      setState("copied");
    } catch {
      setState("failed");
    }
  };
  return (
    <button type="button" className="button button--small" onClick={copy} aria-label={label} data-url={url} title={url}>
      <Icon icon={state === "copied" ? Check : Link2} size="sm" />
      {state === "copied" ? "Link copied" : state === "failed" ? "Copy failed: select the address bar" : "Copy link"}
    </button>
  );
}
