/**
 * The Overview's default chart range follows the data: an install whose first sample is less than
 * SHORT_HISTORY_HOURS old opens on the last hour (a 24-hour chart of a new install is nearly empty);
 * otherwise the last 24 hours. `?range=` always wins.
 */
import { z } from "zod";
import { query } from "@/lib/db/sql";
import type { MetricsRange } from "./schema";

export const SHORT_HISTORY_HOURS = 6;

/** Pure: the range for data that starts at `oldest` (null: no sample yet). */
export function rangeForData(oldest: Date | null, now: Date): MetricsRange {
  if (!oldest) return "1h";
  return now.getTime() - oldest.getTime() < SHORT_HISTORY_HOURS * 3600_000 ? "1h" : "24h";
}

/** Reads the oldest sample (the primary key's first entry); on any failure, the old default (24 h). */
export async function defaultMetricsRange(): Promise<MetricsRange> {
  try {
    const [row] = await query(z.object({ oldest: z.date().nullable(), now: z.date() }), "SELECT (SELECT min(at) FROM metric_samples) AS oldest, now() AS now");
    return rangeForData(row.oldest, row.now);
  } catch {
    return "24h";
  }
}
