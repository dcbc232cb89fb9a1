"use client";

import { useCallback, useEffect, useState } from "react";
import styles from "@/components/auth/auth.module.css";
import { RETURN_TO_PARAM, safeReturnTo } from "@/lib/auth/return-to";

const CHECK_EVERY_MS = 5_000;

/** Asks the server whether the database answers again: GET /api/v1/session answers 503 while it does not. */
async function databaseAnswers(): Promise<boolean> {
  try {
    const res = await fetch("/api/v1/session", { cache: "no-store", headers: { accept: "application/json" } });
    return res.status !== 503;
  } catch {
    return false;
  }
}

/** The console's "database unreachable" state: what it means, what is safe, and a retry (also automatic). */
export function DatabaseUnavailable() {
  const [checking, setChecking] = useState(false);
  const [lastCheck, setLastCheck] = useState<string | null>(null);

  const check = useCallback(async () => {
    setChecking(true);
    const ok = await databaseAnswers();
    setChecking(false);
    setLastCheck(new Date().toLocaleTimeString());
    // Back to the page that was open (?next=, checked: lib/auth/return-to.ts), loaded afresh: every query starts again.
    if (ok) window.location.assign(safeReturnTo(new URLSearchParams(window.location.search).get(RETURN_TO_PARAM)));
  }, []);

  useEffect(() => {
    const timer = setInterval(() => void check(), CHECK_EVERY_MS);
    return () => clearInterval(timer);
  }, [check]);

  return (
    <section aria-labelledby="db-unreachable-title" role="alert">
      <h1 className={styles.title} id="db-unreachable-title">
        Database unreachable
      </h1>
      <p>
        Keyward is running but cannot reach its PostgreSQL database, so the console cannot show anything right now. API
        calls answer <code>503</code> with <code>Retry-After</code> meanwhile; claims already recorded are safe, and
        nothing is reported as claimed that was not.
      </p>
      <p className="muted">
        This page checks again every {CHECK_EVERY_MS / 1000} s and returns to the console once the database answers
        {lastCheck ? ` (last check ${lastCheck})` : ""}.
      </p>
      <button type="button" className="button" onClick={() => void check()} disabled={checking}>
        {checking ? "Checking…" : "Retry now"}
      </button>
    </section>
  );
}
