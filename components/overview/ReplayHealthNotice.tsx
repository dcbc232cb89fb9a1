import Link from "next/link";
import { formatCount, formatDateTime } from "@/components/ui/format";
import type { Overview } from "@/lib/overview/schema";
import panelStyles from "@/components/ui/Panel.module.css";

/** Running replays that are stalled or failing, each with its latest error and that error's time; nothing when all are healthy. Display only. */
export function ReplayHealthNotice({ replays }: { replays: Overview["replays"] }) {
  if (replays.unhealthy === 0) return null;
  return (
    <section className={panelStyles.panel} role="alert" aria-label="Unhealthy replays" data-testid="overview-replay-health">
      <p className="warn-text">
        <strong>
          {formatCount(replays.unhealthy)} of {formatCount(replays.running)} running replay{replays.running === 1 ? "" : "s"} need attention
        </strong>{" "}
        ({formatCount(replays.stalled)} stalled, {formatCount(replays.failing)} failing).
      </p>
      <ul>
        {(replays.unhealthyItems ?? []).map((r) => (
          <li key={r.id}>
            <Link href={`/replays/${r.id}`}>Replay of {r.source}</Link>: <strong>{r.state}</strong>
            {r.reason && <> — {r.reason}</>}
            {r.lastError && (
              <div className="mono small">
                {r.lastErrorAt && <>{formatDateTime(r.lastErrorAt, true)}: </>}
                {r.lastError}
              </div>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
