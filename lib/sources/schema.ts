/** Source (sender) schemas: TTL = retry window + queue lag + clock skew + replay margin, finite. */
import { z } from "zod";
import { sourceName } from "../claims/schema";

export const MAX_TTL_SECONDS = 90 * 86400;

const part = (label: string) =>
  z.number().int(`${label} must be a whole number of seconds`).min(0, `${label} must not be negative`);

export const sourceParts = z.strictObject({
  retryWindowSeconds: part("retryWindowSeconds").min(1, "retryWindowSeconds must be at least 1 second"),
  queueLagSeconds: part("queueLagSeconds"),
  clockSkewSeconds: part("clockSkewSeconds"),
  replaySeconds: part("replaySeconds"),
});

export const createSourceRequest = sourceParts
  .extend({ name: sourceName })
  .refine((s) => ttlOf(s) <= MAX_TTL_SECONDS, {
    message: `TTL (the sum of the four parts) must be at most ${MAX_TTL_SECONDS} seconds (90 days)`,
    path: ["ttlSeconds"],
  });
export type CreateSourceRequest = z.input<typeof createSourceRequest>;

export function ttlOf(p: z.infer<typeof sourceParts>): number {
  return p.retryWindowSeconds + p.queueLagSeconds + p.clockSkewSeconds + p.replaySeconds;
}

export type SourceInfo = z.infer<typeof sourceParts> & {
  name: string;
  ttlSeconds: number;
  createdAt: Date;
  updatedAt: Date;
};
