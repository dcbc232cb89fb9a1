import type { ReactNode } from "react";

export type TooltipRow = { name: string; color: string; value: string };

/** The box a chart shows on hover: the point's time, then each series' value. Display only. */
export function ChartTooltip({ title, rows, note }: { title: string; rows: TooltipRow[]; note?: ReactNode }) {
  return (
    <div className="chart-tooltip">
      <div className="chart-tooltip__title">{title}</div>
      {rows.map((r) => (
        <div key={r.name} className="chart-tooltip__row">
          <span className="chart-swatch" style={{ background: r.color }} aria-hidden="true" />
          <span className="chart-tooltip__name">{r.name}</span>
          <span className="chart-tooltip__value">{r.value}</span>
        </div>
      ))}
      {note && <div className="chart-tooltip__note">{note}</div>}
    </div>
  );
}

/** A chart's key, as plain HTML above the plot. */
export function ChartLegend({ items }: { items: { name: string; color: string; dashed?: boolean; bar?: boolean }[] }) {
  return (
    <ul className="chart-legend">
      {items.map((i) => (
        <li key={i.name}>
          <span
            className={`chart-swatch${i.bar ? " chart-swatch--bar" : i.dashed ? " chart-swatch--dashed" : ""}`}
            style={{ background: i.dashed ? undefined : i.color, borderColor: i.color }}
            aria-hidden="true"
          />
          {i.name}
        </li>
      ))}
    </ul>
  );
}
