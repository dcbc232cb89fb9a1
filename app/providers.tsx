"use client";

import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { ApiError, isSessionEnded } from "@/components/api";
import { signInPath } from "@/lib/auth/return-to";
import { clsx } from "clsx";
import calloutStyles from "@/components/ui/Callout.module.css";

/** Whether a failed read means the server answered that its database is unreachable. */
function isDatabaseUnavailable(err: unknown): boolean {
  return err instanceof ApiError && err.status === 503;
}

/** One QueryClient per browser tab (created in state so a re-render never drops the cache). */
export function Providers({ children }: { children: ReactNode }) {
  const [databaseDown, setDatabaseDown] = useState(false);
  const [client] = useState(
    () =>
      new QueryClient({
        queryCache: new QueryCache({
          // A read refused with 401 means the session ended (signed out elsewhere, role changed, account
          // disabled): the console cannot show anything more, so it goes to the sign-in page. A 503 means
          // the database is unreachable: one banner says so above whatever the screen still shows.
          onError: (err) => {
            if (isSessionEnded(err) && window.location.pathname !== "/sign-in") {
              const { pathname, search, hash } = window.location;
              // A full page load (nothing of this session stays in memory), and back here once signed in again.
              window.location.assign(signInPath(pathname + search + hash));
            }
            if (isDatabaseUnavailable(err)) setDatabaseDown(true);
          },
          onSuccess: () => setDatabaseDown(false),
        }),
        defaultOptions: {
          queries: {
            // Screens poll on their own cadence; a focus or remount within 5 s reuses what is on screen.
            staleTime: 5_000,
            refetchOnWindowFocus: true,
          },
        },
      }),
  );
  return (
    <QueryClientProvider client={client}>
      {databaseDown && (
        <div className={clsx(calloutStyles.callout, calloutStyles.error, calloutStyles.banner)} role="alert" data-testid="database-unreachable">
          <div className={calloutStyles.title}>Database unreachable</div>
          <p className={calloutStyles.body}>
            Keyward cannot reach its database right now: what is on screen may be out of date, and changes are refused
            (503) until it is back. Screens keep retrying on their own.
          </p>
          <button type="button" className="button" onClick={() => void client.refetchQueries({ type: "active" })}>
            Retry now
          </button>
        </div>
      )}
      {children}
    </QueryClientProvider>
  );
}
