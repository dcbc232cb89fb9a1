/**
 * TTL presets. A preset fills a source's four parts; the TTL is their sum. The sender classes and floors
 * come from the design this product grows from (shared/reference/idempotency-key-ttl.txt, "How long is
 * the sender's retry window, really?"): anchor to the sender's LONGEST retry window, including incident
 * replays, then add queue lag, clock skew and replay margins. Retry figures move: check the sender's
 * current documentation, and edit the parts when yours differ.
 */
import { z } from "zod";
import { parseDuration } from "@/lib/sources/duration";

export type SourceParts = {
  retryWindowSeconds: number;
  queueLagSeconds: number;
  clockSkewSeconds: number;
  replaySeconds: number;
};

export type Preset = {
  name: string;
  label: string;
  /** The sender's retry behaviour the parts assume. */
  assumes: string;
  /** Where the assumption comes from. */
  source: string;
  parts: SourceParts;
};

const p = (retry: string, lag: string, skew: string, replay: string): SourceParts => ({
  retryWindowSeconds: parseDuration(retry),
  queueLagSeconds: parseDuration(lag),
  clockSkewSeconds: parseDuration(skew),
  replaySeconds: parseDuration(replay),
});

const DESIGN = "design reference, sender classes table (shared/reference/idempotency-key-ttl.txt)";

export const PRESETS: readonly Preset[] = [
  {
    name: "internal",
    label: "Lightweight internal hooks (TTL 24 h)",
    assumes: "a handful of attempts over minutes; your own bus retries exactly as long as you configured it",
    source: `${DESIGN}: minutes of retries → floor ~24 hours`,
    parts: p("1h", "6h", "5m", "16h55m"),
  },
  {
    name: "saas",
    label: "SaaS event senders retrying up to ~24 h (TTL 3 d)",
    assumes: "retries for up to about a day",
    source: `${DESIGN}: up to ~24 hours → floor ~3 days`,
    parts: p("1d", "1d", "5m", "23h55m"),
  },
  {
    name: "payments",
    label: "Stripe-class payment providers, ~3 d of retries (TTL 7 d)",
    assumes: "exponential backoff for up to roughly three days",
    source: `${DESIGN}: up to ~3 days → floor ~7 days ("three for retries, and four of slack")`,
    parts: p("3d", "1d", "5m", "2d23h55m"),
  },
  {
    name: "incident-replay",
    label: "Providers that replay incidents, ~1 week (TTL 14 d)",
    assumes: "backlogs replayed for up to about a week after the provider's own incidents",
    source: `${DESIGN}: up to about a week → floor ~14 days`,
    parts: p("7d", "2d", "5m", "4d23h55m"),
  },
  {
    name: "stripe",
    label: "Stripe (retries ~3 d → TTL 7 d)",
    assumes: "Stripe retries failed webhook deliveries with exponential backoff for up to about three days",
    source: `${DESIGN}: "Stripe retries … for up to roughly three days"; seven days is the design's Stripe default`,
    parts: p("3d", "1d", "5m", "2d23h55m"),
  },
  {
    name: "shopify",
    label: "Shopify (fixed retries over ~2 d → TTL 7 d)",
    assumes: "a fixed number of retries across a window of a couple of days",
    source: `${DESIGN}: "Shopify retries a fixed number of times across a window measured in a couple of days" → the ~3-day class`,
    parts: p("2d", "1d", "5m", "3d23h55m"),
  },
  {
    name: "github",
    label: "GitHub (few automatic attempts, manual redelivery → TTL 4 d)",
    assumes: "a small number of automatic attempts; redeliveries are manual, so the replay margin carries them",
    source: `${DESIGN}: "GitHub does only a small number of automatic attempts and leans on manual redelivery"`,
    parts: p("1h", "1d", "5m", "2d22h55m"),
  },
  {
    name: "svix",
    label: "Svix-style schedules ending ~27.6 h after the first attempt (TTL 7 d)",
    assumes: "attempts at 0, 5 s, 5 m, 30 m, 2 h, 5 h, 10 h and 10 h: the last ~27.6 h after the first",
    source:
      "Svix's published retry schedule (immediately, 5 s, 5 m, 30 m, 2 h, 5 h, 10 h, 10 h). 27.6 h is past the design's ~24 h class, so the next floor (~7 days) applies",
    parts: p("1d4h", "1d", "5m", "4d19h55m"),
  },
];

export function findPreset(name: string): Preset | undefined {
  return PRESETS.find((x) => x.name === name);
}

export const ttlOfParts = (s: SourceParts) => s.retryWindowSeconds + s.queueLagSeconds + s.clockSkewSeconds + s.replaySeconds;

/** The design's TTL floor for a sender whose longest retry window is `retrySeconds`. */
export function ttlFloorFor(retrySeconds: number): number {
  const h = 3600;
  const d = 86400;
  if (retrySeconds <= h) return d; // minutes of retries → ~24 h
  if (retrySeconds <= 1 * d) return 3 * d;
  if (retrySeconds <= 3 * d) return 7 * d;
  if (retrySeconds <= 7 * d) return 14 * d;
  return retrySeconds * 2; // beyond the table: at least double the window
}

const seconds = z.number().int().nonnegative();
/** GET /presets: each preset with its parts and their sum. */
export const presetListSchema = z.object({
  presets: z.array(
    z.object({
      name: z.string(),
      label: z.string(),
      assumes: z.string(),
      source: z.string(),
      parts: z.object({ retryWindowSeconds: seconds, queueLagSeconds: seconds, clockSkewSeconds: seconds, replaySeconds: seconds }),
      ttlSeconds: seconds,
    }),
  ),
});
