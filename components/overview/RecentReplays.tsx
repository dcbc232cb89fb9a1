import Link from "next/link";
import { formatCount, formatDateTime } from "@/components/ui/format";
import { OutcomeBadge } from "@/components/replay/OutcomeBadge";
import type { Overview } from "@/lib/overview/schema";
import { REPLAY_OUTCOMES } from "@/lib/replay/outcome";
import { Panel } from "@/components/ui/Panel";
import styles from "./overview.module.css";

/**
 * Replays finished in the last 24 hours: how many ended each way, and the newest few that did not succeed
 * with their outcome in its colour and the counts it comes from; nothing when none finished. Display only.
 */
export function RecentReplays({ replays }: { replays: Overview["replays"] }) {
  const byOutcome = replays.finishedLastDay;
  const items = replays.recentlyFinished ?? [];
  if (!byOutcome || REPLAY_OUTCOMES.every((o) => byOutcome[o] === 0)) return null;
  return (
    <Panel title="Replays finished in the last 24 h" className={styles.recentReplays} data-testid="overview-recent-replays">
      <p className="small">
        {REPLAY_OUTCOMES.filter((o) => byOutcome[o] > 0)
          .map((o) => `${formatCount(byOutcome[o])} ${o}`)
          .join(" · ")}
      </p>
      {items.length === 0 && <p className="muted small">All of them succeeded.</p>}
      <ul>
        {items.map((r) => (
          <li key={r.id} data-testid="overview-recent-replay">
            <OutcomeBadge outcome={r.outcome} /> <Link href={`/replays/${r.id}`}>Replay of {r.source}</Link>:{" "}
            {formatCount(r.delivered)} of {formatCount(r.total)} delivered
            {r.failed > 0 && <>, {formatCount(r.failed)} failed</>}
            {r.skippedUnsafe > 0 && <>, {formatCount(r.skippedUnsafe)} skipped as unsafe</>}{" "}
            <span className="muted small">· finished {formatDateTime(r.finishedAt, true)}</span>
          </li>
        ))}
      </ul>
    </Panel>
  );
}
