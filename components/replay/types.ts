/**
 * TEMPORARY: the replay API's shapes as /work/notes/replay-contract.md states them, until the backend's
 * lib/replay/schema.ts and lib/deadletters/schema.ts reach this branch; then the console imports the
 * inferred types from there and this file goes.
 */

export const CATEGORIES = ["alive", "expiring", "expired_processed", "never_processed", "in_flight"] as const;
export type Category = (typeof CATEGORIES)[number];

export type DeadLetterStatus = "pending" | "replaying" | "delivered";
export type KeyState = "alive" | "in_flight" | "expired" | "none";

export type DeadLetter = {
  id: string;
  source: string;
  eventId: string;
  eventType: string;
  error: string;
  attempts: number;
  failedAt: string;
  queue: string | null;
  status: DeadLetterStatus;
  receivedAt: string;
  settledAt: string | null;
  key: { state: KeyState; expiresAt: string | null };
};

export type DeadLetterCounts = {
  total: number;
  bySource: { source: string; count: number }[];
  byError: { error: string; count: number }[];
  keyRisk: { expired: number; expiringSoon: number };
};

export type DeadLetterPage = { items: DeadLetter[]; nextCursor: string | null; counts: DeadLetterCounts };

export type PreflightItem = {
  deadLetterId: string;
  eventId: string;
  eventType: string;
  category: Category;
  keyExpiresAt: string | null;
  processedAt: string | null;
  reason: string;
};

export type PreflightCounts = Record<Category, number> & { total: number };

export type Preflight = {
  preflightId: string;
  source: string;
  createdAt: string;
  validUntil: string;
  windowSeconds: number;
  extendedAt: string | null;
  counts: PreflightCounts;
  items: PreflightItem[];
};

export type ReplayStatus = "running" | "paused" | "cancelled" | "completed";
export type ItemOutcome = "pending" | "delivering" | "delivered" | "failed" | "skipped_unsafe" | "cancelled";

export type ReplaySummary = {
  id: string;
  source: string;
  status: ReplayStatus;
  preflightId: string;
  include: Category[];
  forced: boolean;
  forceReason: string | null;
  ratePerSecond: number;
  concurrency: number;
  createdBy: string;
  createdAt: string;
  finishedAt: string | null;
  total: number;
  counts: Record<ItemOutcome, number>;
};

export type ReplayItemResult = {
  deadLetterId: string;
  eventId: string;
  outcome: ItemOutcome;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  finishedAt: string | null;
};

export type Replay = ReplaySummary & { failures: ReplayItemResult[]; items: ReplayItemResult[] };
