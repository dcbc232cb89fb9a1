import type { ReactNode } from "react";
import { clsx } from "clsx";
import skeleton from "./Skeleton.module.css";
import styles from "./StatCard.module.css";

export type StatTone = "normal" | "warn";

/** One headline figure with a label and a line of context. Display only. */
export function StatCard({
  label,
  value,
  hint,
  tone = "normal",
  title,
}: {
  label: string;
  value: ReactNode;
  hint?: ReactNode;
  tone?: StatTone;
  /** Longer explanation, shown on hover. */
  title?: string;
}) {
  return (
    <div className={clsx(styles.card, tone === "warn" && styles.warn)} title={title}>
      <div className={styles.label}>{label}</div>
      <div className={styles.value}>{value}</div>
      {hint !== undefined && <div className={styles.hint}>{hint}</div>}
    </div>
  );
}

/** Placeholder with the same footprint while the first figures load. */
export function StatCardSkeleton({ label }: { label: string }) {
  return (
    <div className={styles.card} aria-hidden="true">
      <div className={styles.label}>{label}</div>
      <div className={clsx(styles.value, skeleton.skeleton)}>&nbsp;</div>
      <div className={clsx(styles.hint, skeleton.skeleton)}>&nbsp;</div>
    </div>
  );
}
