import { Time } from "@/components/ui/Time";
import type { MetricAnnotation } from "@/lib/metrics/schema";
import styles from "./ChartCard.module.css";

/**
 * The configuration changes the charts mark (◆ and a dashed line at each), listed under them so they read
 * without hovering: when, and what changed ("orders TTL 8h5m → 7d"). Nothing when there were none.
 */
export function AnnotationList({ annotations }: { annotations: readonly MetricAnnotation[] }) {
  if (annotations.length === 0) return null;
  return (
    <section className={styles.annotations} aria-label="Changes in this range">
      <h3 className={styles.annotationsTitle}>
        <span aria-hidden="true">◆</span> Changes in this range
      </h3>
      <ul className={styles.annotationList}>
        {[...annotations].reverse().map((a) => (
          <li key={`${a.at}-${a.label}`}>
            <Time iso={a.at} /> · {a.label}
          </li>
        ))}
      </ul>
    </section>
  );
}
