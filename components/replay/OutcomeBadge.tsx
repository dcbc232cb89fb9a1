import { Status } from "@/components/ui/Status";
import { OUTCOME_TONE, type ReplayOutcome } from "@/lib/replay/outcome";

/** How a finished replay ended, in its colour (succeeded green, partial amber, failed red, cancelled grey). Display only. */
export function OutcomeBadge({ outcome, title }: { outcome: ReplayOutcome; title?: string }) {
  return (
    <Status tone={OUTCOME_TONE[outcome]} title={title} data-replay-outcome={outcome}>
      {outcome}
    </Status>
  );
}
