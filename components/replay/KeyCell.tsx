import { formatDateTime } from "@/components/ui/format";
import { describeExpiry } from "./prepare";
import type { DeadLetter } from "@/lib/deadletters/schema";

const KEY_LABEL: Record<DeadLetter["key"]["state"], string> = {
  alive: "alive",
  in_flight: "in flight",
  expired: "expired",
  none: "no key",
};

/** A dead letter's dedup key: its state and when it expires (relative to `nowMs`). Display only. */
export function KeyCell({ dl, nowMs }: { dl: DeadLetter; nowMs: number }) {
  const at = dl.key.expiresAt ? Date.parse(dl.key.expiresAt) : null;
  const tone = dl.key.state === "expired" ? "status--error" : dl.key.state === "alive" ? "status--ok" : "status--off";
  return (
    <>
      <span className={`status ${tone}`}>{KEY_LABEL[dl.key.state]}</span>
      {dl.key.expiresAt && (
        <div className="muted small" title={formatDateTime(dl.key.expiresAt, true)}>
          {describeExpiry(at, nowMs)}
        </div>
      )}
    </>
  );
}
