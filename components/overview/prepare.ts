/** Pure derivations for the overview display (no React): what the screen computes from the counts. */
import type { ClaimCounts } from "@/lib/overview/schema";

/** Every claim attempt of the window: deliveries that got a new key plus those that were turned away. */
export function attemptsOf(c: ClaimCounts): number {
  return c.claimed + c.duplicate + c.inFlight + c.payloadMismatch;
}

/** Deliveries turned away because another worker still held the key's lease or the payload differed. */
export function conflictsOf(c: ClaimCounts): number {
  return c.inFlight + c.payloadMismatch;
}
