/**
 * The TTL advisor's API (GET /api/v1/sources/{name}/advice?window=30d) and the late-duplicate list
 * (GET /api/v1/sources/{name}/late-duplicates): query and response schemas, shared by the routes, the
 * CLI, the console and the tests.
 */
import { z } from "zod";
import { cursorParam, encodeCursor } from "@/lib/pagination";
import { parseDuration } from "@/lib/sources/duration";
import { DUPLICATE_AGES_KEPT_DAYS } from "@/lib/metrics/duplicate-ages";
import { instant, isInstant, unstorableReason } from "@/lib/http/fields";

export const DEFAULT_ADVICE_WINDOW = "30d";
export const MIN_WINDOW_SECONDS = 3600;
export const MAX_WINDOW_SECONDS = DUPLICATE_AGES_KEPT_DAYS * 86400;

/**
 * A window as people type it ("30d", "7d", "12h", "1d12h"), 1 hour to 90 days (the histogram's
 * retention), default 30 days; parsed to `{ text, seconds }`. Anything else is the one 422 naming `window`
 * (`invalid_request`), like every other bad field. The routes' query schemas and the CLI parse it.
 */
export const adviceWindow = z
  .string()
  .max(32)
  .default(DEFAULT_ADVICE_WINDOW)
  .transform((t, ctx) => {
    let seconds: number;
    try {
      seconds = parseDuration(t);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message });
      return z.NEVER;
    }
    if (seconds < MIN_WINDOW_SECONDS || seconds > MAX_WINDOW_SECONDS) {
      ctx.addIssue({
        code: "custom",
        message: `must be between 1h and ${DUPLICATE_AGES_KEPT_DAYS}d (duplicate ages are kept ${DUPLICATE_AGES_KEPT_DAYS} days), got ${t}`,
      });
      return z.NEVER;
    }
    return { text: t.trim(), seconds };
  });
export type AdviceWindow = z.output<typeof adviceWindow>;

/** `?window=30d` and nothing else (an unknown parameter is a 422 naming it). */
export const adviceQuery = z.strictObject({ window: adviceWindow });

const seconds = z.number().nonnegative();
const count = z.number().int().nonnegative();

export const partsSchema = z.object({
  retryWindowSeconds: count,
  queueLagSeconds: count,
  clockSkewSeconds: count,
  replaySeconds: count,
});

export const lateDuplicateSchema = z.object({
  eventId: z.string(),
  /** The earlier claim of the event (its key then expired). */
  firstClaimAt: instant,
  /** The claim that processed it again. */
  lateClaimAt: instant,
  gapSeconds: seconds,
});
export type LateDuplicateExample = z.infer<typeof lateDuplicateSchema>;

export const adviceSchema = z.object({
  source: z.string(),
  /** The window as asked for ("30d"). */
  window: z.string(),
  observed: z.object({
    /** Duplicates answered in the window (claims made on a caller's own connection are not counted). */
    duplicates: count,
    /** Upper bounds: the upper edge of the bucket holding the percentile, never above the largest age. */
    ageP50Seconds: seconds.nullable(),
    ageP99Seconds: seconds.nullable(),
    ageP999Seconds: seconds.nullable(),
    maxAgeSeconds: seconds.nullable(),
    /** Duplicates per bucket: `leSeconds` is the bucket's upper edge; null for the last one (> 90 d). */
    histogram: z.array(z.object({ leSeconds: seconds.nullable(), count })),
    /** Events processed twice in the window because their key had expired. */
    lateDuplicates: count,
    /** The (at most 10) late duplicates with the longest gaps. */
    lateDuplicateExamples: z.array(lateDuplicateSchema),
    /**
     * The late duplicates judged (lib/retention/evidence.ts): the sender's (evidence), by the TTL in force at
     * their first claim, and those an operator's forced replay made (apart: never evidence).
     */
    lateEvidence: z.object({
      sender: count,
      senderMaxGapSeconds: seconds.nullable(),
      underCurrentTtl: count,
      replays: count,
      replaysMaxGapSeconds: seconds.nullable(),
      byTtl: z.array(
        z.object({ ttlSeconds: count, from: z.string().nullable(), until: z.string().nullable(), current: z.boolean(), count, maxGapSeconds: seconds }),
      ),
    }),
  }),
  current: z.object({ ttlSeconds: count, parts: partsSchema }),
  recommended: z.object({ ttlSeconds: count, parts: partsSchema, reasons: z.array(z.string()) }).nullable(),
  /** Why `recommended` is null (too little evidence: how much more is needed); null when there is one. */
  reason: z.string().nullable(),
  /** The one verdict (lib/retention/advisor.ts adviceVerdict): the badge and the text the console and the CLI show. */
  verdict: z.object({ tone: z.enum(["ok", "warn", "neutral"]), badge: z.string(), text: z.string(), changes: z.boolean() }),
  /** Projected steady-state size of the source's keys: recent claim rate × TTL × bytes per key. */
  projection: z.object({ currentBytes: count, recommendedBytes: count.nullable() }),
});
export type AdviceResponse = z.infer<typeof adviceSchema>;

const MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** A page's position (lib/pagination.ts): the last item's late claim time (microseconds, UTC) and event id. */
export const latePosition = z.strictObject({
  at: z.string().refine((at) => MICROS.test(at) && isInstant(at)),
  eventId: z.string().refine((id) => unstorableReason(id) === null),
});

/** GET /api/v1/sources/{name}/late-duplicates: `?window=30d&limit=50&cursor=…`, newest first. */
export const lateDuplicatesQuery = z.strictObject({
  window: adviceWindow,
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: cursorParam(latePosition).optional(),
});

export type LateDuplicatesParams = z.output<typeof lateDuplicatesQuery>;

export const lateDuplicateItemSchema = lateDuplicateSchema.extend({
  eventType: z.string().nullable(),
  /** pruned: the key had been deleted; unpruned: the expired key was still stored (reclaimed_after_expiry). */
  keyState: z.enum(["pruned", "unpruned"]),
  /** The late claim came while a Keyward replay re-drove the event. */
  viaReplay: z.boolean(),
  /** Who made the late claim (the API key's name, or "library"). */
  lateActor: z.string().nullable(),
});
export type LateDuplicateItem = z.infer<typeof lateDuplicateItemSchema>;

export const lateDuplicatesPageSchema = z.object({
  items: z.array(lateDuplicateItemSchema),
  /** Pass as `cursor` for the next (older) page; null on the last one. */
  next: z.string().nullable(),
  /** Late duplicates per UTC day of the window, oldest first (days without any included). */
  perDay: z.array(z.object({ day: z.string(), count, viaReplay: count })),
});
export type LateDuplicatesPage = z.infer<typeof lateDuplicatesPageSchema>;

/** The cursor of the page after this item. */
export function encodeLateCursor(atMicros: string, eventId: string): string {
  return encodeCursor({ at: atMicros, eventId });
}
