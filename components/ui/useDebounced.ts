"use client";

import { useEffect, useState } from "react";

/** `value`, once it has stayed the same for `ms` (a filter typed into asks the server once, not per key). */
export function useDebounced<T>(value: T, ms = 250): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}
