"use client";

import Link from "next/link";
import { useCan } from "@/components/auth/SessionProvider";
import { CommandBlock } from "@/components/ui/CommandBlock";
import { EmptyState } from "@/components/ui/EmptyState";
import styles from "./overview.module.css";

/** First-run guidance: no source exists, so nothing can be claimed yet. */
export function NoSources() {
  const isAdmin = useCan("admin");
  // Rendered only in the browser after the overview loaded, so the page's own origin is known.
  const origin = typeof window === "undefined" ? "http://localhost:3000" : window.location.origin;
  return (
    <EmptyState title="No source yet">
      <p>
        A source is one sender of events (Stripe, GitHub, your own queue). Each has a deliberate key lifetime:
        the sender&apos;s retry window plus margins for queue lag, clock skew and replays. Keyward refuses claims for a
        source that does not exist.
      </p>
      {!isAdmin && <p>Sources and API keys are created by an admin, on the server:</p>}
      <ol className={styles.steps}>
        <li>
          Create a source (here: a Stripe-class sender, keys live 7 days 5 minutes):
          <CommandBlock command="npx keyward source create stripe --retry-window 3d --queue-lag 1d --clock-skew 5m --replay 3d" />
        </li>
        <li>
          Create an API key for the service that receives the webhooks (the key is shown once)
          {isAdmin ? (
            <>
              {" "}
              on the <Link href="/api-keys">API keys</Link> page, or with the CLI:
            </>
          ) : (
            ":"
          )}
          <CommandBlock command="npx keyward apikey create --name my-service --scopes claims:write" />
        </li>
        <li>
          Claim each event before handling it; a second delivery of the same event id answers <code>duplicate</code>:
          <CommandBlock
            command={`curl -X POST ${origin}/api/v1/claims -H "Authorization: Bearer $KEYWARD_API_KEY" -H "Content-Type: application/json" -d '{"source":"stripe","eventId":"evt_123","eventType":"invoice.paid"}'`}
          />
        </li>
      </ol>
      <p className="muted">This page refreshes by itself: the source appears here as soon as it exists.</p>
    </EmptyState>
  );
}
