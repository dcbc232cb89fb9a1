import type { ReactNode } from "react";
import styles from "./charts.module.css";

export type TooltipRow = { name: string; color: string; value: string };

/** The box a chart shows on hover: the point's time, then each series' value. Display only. */
export function ChartTooltip({ title, rows, note }: { title: string; rows: TooltipRow[]; note?: ReactNode }) {
  return (
    <div className={styles.tooltip} data-testid="chart-tooltip">
      <div className={styles.tooltipTitle}>{title}</div>
      {rows.map((r) => (
        <div key={r.name} className={styles.tooltipRow}>
          <span className={styles.swatch} style={{ background: r.color }} aria-hidden="true" />
          <span className={styles.tooltipName}>{r.name}</span>
          <span>{r.value}</span>
        </div>
      ))}
      {note && <div className={styles.tooltipNote}>{note}</div>}
    </div>
  );
}

/** A chart's key, as plain HTML above the plot. */
export function ChartLegend({ items }: { items: { name: string; color: string; dashed?: boolean; bar?: boolean }[] }) {
  return (
    <ul className={styles.legend}>
      {items.map((i) => (
        <li key={i.name}>
          <span
            className={`${styles.swatch}${i.bar ? ` ${styles.swatchBar}` : i.dashed ? ` ${styles.swatchDashed}` : ""}`}
            style={{ background: i.dashed ? undefined : i.color, borderColor: i.color }}
            aria-hidden="true"
          />
          {i.name}
        </li>
      ))}
    </ul>
  );
}
