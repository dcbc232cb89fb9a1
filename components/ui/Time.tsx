"use client";

import { formatDateTime, formatRelative } from "./format";
import { useHydrated } from "./useHydrated";
import { useNow } from "@/components/replay/useNow";

/**
 * The one way the console shows an instant (Linear/Vercel): relative to now ("5 min ago", kept current),
 * the absolute date and time in the one date format on hover (and for screen readers, via the title and
 * the machine-readable `dateTime`). `absolute` shows the date and time itself (a detail page's headline),
 * the relative time then goes on hover. Before hydration the absolute form is rendered, so the server's
 * HTML never disagrees with the browser's clock.
 */
export function Time({ iso, absolute = false, className }: { iso: string; absolute?: boolean; className?: string }) {
  const hydrated = useHydrated();
  const now = useNow(30_000);
  const full = formatDateTime(iso, true);
  const relative = hydrated ? formatRelative(iso, now) : null;
  const shown = absolute || !relative ? full : relative;
  const hover = absolute ? (relative ?? full) : full;
  return (
    <time dateTime={iso} title={hover} className={className}>
      {shown}
    </time>
  );
}
