import type { Metadata } from "next";
import { CommandBlock } from "@/components/ui/CommandBlock";
import { PageHeader } from "@/components/ui/PageHeader";

export const metadata: Metadata = { title: "Audit" };

export default function Page() {
  return (
    <>
      <PageHeader title="Audit" description="The history of every event: kept long after its dedup key has expired." />
      <section className="panel">
        <p className="badge">Not in the console yet</p>
        <p>
          Keyward already records every claim, lease takeover, reclaim after expiry, completion and release in its audit
          history, in the same transaction as the change itself. Searching that history by source and event id, with the
          actor and details of each step, comes to this screen in a later release.
        </p>
        <h2 className="section-title">Until then</h2>
        <p>The state of one key now (alive with time left, expired, or unknown), with an API key of scope <code>claims:read</code>:</p>
        <CommandBlock command={`curl -H "Authorization: Bearer $KEYWARD_API_KEY" http://localhost:3000/api/v1/claims/stripe/evt_123`} />
        <p>The full history of one event, in <code>psql</code> on Keyward&apos;s database:</p>
        <CommandBlock command="SELECT at, kind, actor, detail FROM audit_events WHERE source = 'stripe' AND event_id = 'evt_123' ORDER BY at DESC;" />
      </section>
    </>
  );
}
