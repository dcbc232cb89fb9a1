"use client";

import Link from "next/link";
import styles from "./Segmented.module.css";

export type Segment = { value: string; href: string; title?: string };

/**
 * A row of links of which one is current (a time range, an evidence window): state kept in the URL, so a
 * view can be bookmarked and shared. `label` names the control for assistive technology.
 */
export function Segmented({ label, value, segments }: { label: string; value: string; segments: readonly Segment[] }) {
  return (
    <nav className={styles.segmented} aria-label={label}>
      {segments.map((s) => (
        <Link
          key={s.value}
          href={s.href}
          scroll={false}
          replace
          className={s.value === value ? `${styles.segment} ${styles.segmentActive}` : styles.segment}
          aria-current={s.value === value ? "true" : undefined}
          title={s.title}
        >
          {s.value}
        </Link>
      ))}
    </nav>
  );
}
