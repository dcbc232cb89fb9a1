import type { ReactNode } from "react";
import styles from "./ChartCard.module.css";
import { clsx } from "clsx";
import skeleton from "@/components/ui/Skeleton.module.css";

/** The grid the chart cards sit in (one column on narrow screens). */
export function ChartGrid({ children, busy }: { children: ReactNode; busy?: boolean }) {
  return (
    <div className={styles.chartGrid} aria-busy={busy || undefined}>
      {children}
    </div>
  );
}

/**
 * One chart: its title, a headline figure, a legend and the plot. `plot` false hands the children the card's
 * body unwrapped (a chart with a height of its own, a table beside it). `label` names the region when the
 * title is too long for it (default: the title).
 */
export function ChartCard({
  title,
  headline,
  legend,
  children,
  label = title,
  plot = true,
  testId,
}: {
  title: string;
  headline?: ReactNode;
  legend?: ReactNode;
  children: ReactNode;
  label?: string;
  plot?: boolean;
  testId?: string;
}) {
  return (
    <section className={styles.chartCard} aria-label={label} data-chart={label} data-testid={testId}>
      <header className={styles.chartHeader}>
        <h3 className={styles.chartTitle}>{title}</h3>
        {headline && <div className={styles.chartHeadline}>{headline}</div>}
      </header>
      {legend}
      {plot ? <div className={styles.chartPlot}>{children}</div> : children}
    </section>
  );
}

/** What a card shows in place of its plot when there is nothing to draw. */
export function ChartEmpty({ children }: { children: ReactNode }) {
  return <p className={clsx("muted", styles.chartEmpty)}>{children}</p>;
}

/** A card's placeholder while its data loads. */
export function ChartSkeleton() {
  return <div className={clsx(skeleton.skeleton, styles.chartSkeleton)} />;
}
