import { formatDateTime } from "@/components/ui/format";
import { describeExpiry } from "./key-risk";
import type { DeadLetter } from "@/lib/deadletters/schema";
import { Status, type Tone } from "@/components/ui/Status";

const KEY_LABEL: Record<DeadLetter["key"]["state"], string> = {
  alive: "alive",
  in_flight: "in flight",
  expired: "expired",
  none: "no key",
};

/**
 * A dead letter's dedup key: its state, and without a live key whether the event was processed (the one
 * verdict, lib/keys/verdict.ts: processed with no live key is what "Keys at risk" counts, in red; not
 * processed is safe to replay), and when it expires (relative to `nowMs`). Display only.
 */
export function KeyCell({ dl, nowMs }: { dl: DeadLetter; nowMs: number }) {
  const at = dl.key.expiresAt ? Date.parse(dl.key.expiresAt) : null;
  const live = dl.key.state === "alive" || dl.key.state === "in_flight";
  const tone: Tone = !live ? (dl.key.processed ? "error" : "off") : dl.key.state === "alive" ? "ok" : "off";
  const label = live ? KEY_LABEL[dl.key.state] : `${KEY_LABEL[dl.key.state]}, ${dl.key.processed ? "processed" : "not processed"}`;
  const title = live
    ? undefined
    : dl.key.processed
      ? "Processed before and no live key: a replay would process it twice"
      : "No record of processing (never claimed, or released): safe to replay";
  return (
    <>
      <Status tone={tone} title={title}>
        {label}
      </Status>
      {dl.key.expiresAt && (
        <div className="muted small" title={formatDateTime(dl.key.expiresAt, true)}>
          {describeExpiry(at, nowMs)}
        </div>
      )}
    </>
  );
}
