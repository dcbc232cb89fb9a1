"use client";

import Link from "next/link";
import { METRICS_RANGES, type MetricsRange } from "@/lib/metrics/schema";
import styles from "./overview.module.css";

const LABELS: Record<MetricsRange, string> = { "1h": "1 hour", "24h": "24 hours", "7d": "7 days", "30d": "30 days" };

/** The charts' time range, kept in the URL (?range=7d) so a view can be bookmarked and shared; `source` is kept too. */
export function RangePicker({ value, source = null }: { value: MetricsRange; source?: string | null }) {
  return (
    <nav className={styles.segmented} aria-label="Time range">
      {(Object.keys(METRICS_RANGES) as MetricsRange[]).map((r) => (
        <Link
          key={r}
          href={`?range=${r}${source ? `&source=${encodeURIComponent(source)}` : ""}`}
          scroll={false}
          replace
          className={r === value ? `${styles.segment} ${styles.segmentActive}` : styles.segment}
          aria-current={r === value ? "true" : undefined}
          title={`Last ${LABELS[r]}`}
        >
          {r}
        </Link>
      ))}
    </nav>
  );
}
