import { formatDateTime } from "@/components/ui/format";
import type { ReplayHealth as Health } from "@/lib/replay/health";

const TONE = { ok: "status--ok", stalled: "status--warn", failing: "status--error" } as const;

/** A replay's health as a badge (ok, stalled, failing). Display only. */
export function HealthBadge({ health }: { health: Health }) {
  return (
    <span className={`status ${TONE[health.state]}`} data-health={health.state} title={health.reason ?? undefined}>
      {health.state}
    </span>
  );
}

/**
 * Why a replay is stalled or failing, with its latest error and that error's time (nothing when ok and no
 * error was recorded). Display only.
 */
export function HealthDetail({ health }: { health: Health }) {
  if (health.state === "ok" && !health.lastError) return null;
  return (
    <div className={health.state === "ok" ? "small" : "warn-text small"} role={health.state === "ok" ? undefined : "alert"} data-testid="replay-health">
      {health.state !== "ok" && (
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
