import type { Metadata } from "next";
import { PageHeader } from "@/components/ui/PageHeader";

export const metadata: Metadata = { title: "Replay" };

export default function Page() {
  return (
    <>
      <PageHeader title="Replay" description="Re-driving old events on purpose, without processing any of them twice by accident." />
      <section className="panel">
        <p className="badge">Not in the console yet</p>
        <p>
          Replaying a batch of events (for example from a dead-letter queue after an incident), with a preflight that shows
          beforehand which events would be processed again and which are still deduplicated, comes to this screen in a
          later release.
        </p>
        <h2 className="section-title">What a replay does today</h2>
        <p>A re-delivered event goes through the normal claim, so its outcome depends on its key:</p>
        <ul>
          <li>
            <strong>key alive and done</strong>: answered <code>duplicate</code>, the handler does not run again;
          </li>
          <li>
            <strong>key expired</strong> (older than the source&apos;s TTL, replay margin included): claimed again (as{" "}
            <code>reclaimed_after_expiry</code>, or as a fresh claim once the pruner has deleted the key), the handler runs;
          </li>
          <li>
            <strong>key released</strong> after a failed handler (<code>POST /api/v1/claims/release</code>): claimed again,
            the handler runs.
          </li>
        </ul>
        <p className="muted">Size a source&apos;s replay margin to the oldest events you may need to re-drive.</p>
      </section>
    </>
  );
}
