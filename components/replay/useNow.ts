"use client";

import { useEffect, useState } from "react";

/** The current time in ms, re-read every `everyMs` (for countdowns and "expires in" labels). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}
