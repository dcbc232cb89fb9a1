import { formatDateTime } from "@/components/ui/format";
import type { ReplayHealth as Health } from "@/lib/replay/health";
import { Status } from "@/components/ui/Status";

const TONE = { ok: "ok", stalled: "warn", failing: "error", finished: "off" } as const;

/** A running or paused replay's health as a badge (ok, stalled, failing). Display only. */
export function HealthBadge({ health }: { health: Health }) {
  return (
    <Status tone={TONE[health.state]} data-health={health.state} title={health.reason ?? undefined}>
      {health.state}
    </Status>
  );
}

/**
 * Why a replay is stalled or failing, with its latest error and that error's time (nothing when ok and no
 * error was recorded). Display only.
 */
export function HealthDetail({ health }: { health: Health }) {
  const calm = health.state === "ok" || health.state === "finished";
  if (calm && !health.lastError) return null;
  return (
    <div className={calm ? "small" : "warn-text small"} role={calm ? undefined : "alert"} data-testid="replay-health">
      {!calm && (
        <p>
          <strong>{health.state === "stalled" ? "Stalled" : "Failing"}</strong>: {health.reason}
        </p>
      )}
      {health.lastError && (
        <p>
          Last error{health.lastErrorAt && <> at {formatDateTime(health.lastErrorAt, true)}</>}: <span className="mono">{health.lastError}</span>
        </p>
      )}
    </div>
  );
}
