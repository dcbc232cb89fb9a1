"use client";

import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { isSessionEnded } from "@/components/api";

/** One QueryClient per browser tab (created in state so a re-render never drops the cache). */
export function Providers({ children }: { children: ReactNode }) {
  const [client] = useState(
    () =>
      new QueryClient({
        // A read refused with 401 means the session ended (signed out elsewhere, role changed, account
        // disabled): the console cannot show anything more, so it goes to the sign-in page.
        queryCache: new QueryCache({
          onError: (err) => {
            if (isSessionEnded(err) && window.location.pathname !== "/sign-in") window.location.assign("/sign-in");
          },
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
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}
